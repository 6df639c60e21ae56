import { InvalidOptionsError } from './invalid-options.error.js';

/**
 * Two handlers were registered for one delayed-job topic in one application (two `@OnDelayed` methods,
 * or `consume()` on a topic that already has a consumer). Each job of a topic goes to one handler,
 * so the second would silently take half of the first one's jobs. Also an `InvalidOptionsError`.
 */
export class DuplicateDelayedHandlerError extends InvalidOptionsError {
  override readonly code = 'DUPLICATE_DELAYED_HANDLER';

  constructor(
    /** The topic with two handlers. */
    readonly topic: string,
    /** Where each handler was registered, e.g. `@OnDelayed on OrderHandlers.expire`. */
    readonly handlers: readonly string[],
  ) {
    super(
      handlers[handlers.length - 1] ?? `topic ${JSON.stringify(topic)}`,
      'a second handler for the topic',
      `Topic ${JSON.stringify(topic)} has more than one delayed-job handler: ${handlers.join(', ')}. ` +
        'Keep one handler per topic (raise its `concurrency` for more parallelism), or give the jobs distinct topics.',
    );
  }
}
