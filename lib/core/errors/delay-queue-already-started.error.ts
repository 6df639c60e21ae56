import { InvalidOptionsError } from './invalid-options.error.js';

/**
 * The application's lifecycle hooks ran a second time, so the `@OnDelayed` consumers it started
 * the first time would be started again. Nest runs them once per `init()`; a second `init()` on the
 * same container (most often `moduleRef.init()` on a testing module followed by `init()` of an
 * application created from it) runs them again. Initialise the application once. The consumers of
 * the first start keep running. Caught as `InvalidOptionsError` (not exported on its own).
 */
export class DelayQueueAlreadyStartedError extends InvalidOptionsError {
  override readonly code = 'DELAY_QUEUE_ALREADY_STARTED';

  constructor(/** The topics of the `@OnDelayed` consumers already started. */ readonly topics: readonly string[]) {
    super(
      'init()',
      'the bootstrap hooks ran a second time',
      `The delayed-job consumers of this application are already started (topics ${topics.map((t) => JSON.stringify(t)).join(', ')}): ` +
        'its bootstrap hooks ran a second time. Call init() once: on a testing module, either moduleRef.init() or ' +
        'moduleRef.createNestApplication().init() (or listen()), not both.',
    );
  }
}
