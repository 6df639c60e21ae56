import type { JobEventMap } from '../core/events/job-event-map.js';
import { ON_JOB_EVENT_METADATA } from '../delay-queue/jobs/delay-queue.constants.js';
import type { OnJobEventMetadata } from '../delay-queue/interfaces/on-job-event-metadata.interface.js';
import { topicName, type TopicRef } from '../delay-queue/typed-topic.js';
import { appendMethodMetadata } from './append-method-metadata.js';

/**
 * Marks a provider method as a listener of one outcome of a delayed-job topic's jobs: `'completed'`,
 * `'failed'`, `'dead'`, `'cancelled'` or `'progress'` (see `JobEventMap` for what each is). It runs
 * on the instance where the outcome happened, once per outcome, as `method(event)` with `this` the
 * provider; the topic need not be consumed by this application's handlers (a `consume()` counts too).
 * It only records metadata: the module finds the methods at bootstrap and stops calling them at
 * shutdown. The provider must be a singleton (not request-scoped).
 *
 * A listener cannot affect the job: what it throws, or rejects with, is logged (once, naming the
 * topic, the event and the job id) and goes no further. It is called synchronously on the consumer's
 * path: an `async` method returns at its first `await`, a long synchronous one delays the consumer.
 *
 * The compiler checks the method's parameter against the event's payload; with a `Topic` token from
 * `defineTopic()`, `'completed'`'s `result` has the token's result type (with a plain name, any type).
 *
 * @example
 * \@Injectable()
 * export class OrderAlerts {
 *   \@OnJobEvent(orderExpire, 'completed')
 *   expired({ id, result }: JobSucceededEvent<{ expired: boolean }>) {
 *     if (result.expired) this.metrics.expired.inc();
 *   }
 *
 *   \@OnJobEvent('invoice.send', 'dead')
 *   async gaveUp({ id, error }: JobDeadEvent) {
 *     await this.pager.page(`invoice ${id}: ${error}`);
 *   }
 * }
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a plain name says nothing of the result: any result type is accepted
export function OnJobEvent<Result = any, Event extends keyof JobEventMap = keyof JobEventMap>(
  topic: TopicRef<unknown, Result>,
  event: Event,
): <Method extends (event: JobEventMap<Result>[Event]) => unknown>(
  target: object,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<Method>,
) => void {
  const metadata: OnJobEventMetadata = { topic: topicName(topic), event };
  return (_target, _key, descriptor) => appendMethodMetadata(ON_JOB_EVENT_METADATA, metadata, descriptor);
}
