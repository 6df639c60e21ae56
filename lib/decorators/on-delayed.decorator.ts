import { ON_DELAYED_METADATA } from '../delay-queue/jobs/delay-queue.constants.js';
import type { ConsumerOptions } from '../delay-queue/interfaces/consumer.interface.js';
import type { OnDelayedMetadata } from '../delay-queue/interfaces/on-delayed-metadata.interface.js';
import type { RepeatOptions, RepeatSchedule } from '../delay-queue/interfaces/repeat-options.interface.js';
import type { DelayedJobHandler } from '../delay-queue/interfaces/job-context.interface.js';
import { topicName, type NotInferred, type Topic, type TopicRef } from '../delay-queue/typed-topic.js';
import { appendMethodMetadata } from './append-method-metadata.js';

/**
 * Options of `@OnDelayed`: the consumer settings of its topic in this process, and optionally
 * `repeat`, a schedule registered at bootstrap as `DelayQueueService.repeat(topic, schedule, options)`
 * would (an upsert: every instance registering it is the normal case).
 */
export type OnDelayedOptions<T = unknown> = ConsumerOptions & {
  /**
   * `{ every: ms }` or `{ cron, timeZone? }`, with the options of `repeat()` (`id`, `payload`, `catchUp`, ...);
   * with a `Topic` token, `payload` is checked against the token's payload type, and required when
   * that type includes neither `null` nor `undefined` (a tick without one carries `null`).
   */
  repeat?: RepeatSchedule & RepeatOptions<T> & (null extends T ? unknown : undefined extends T ? unknown : { payload: T });
};

/**
 * Marks a provider method as the handler of a delayed-job topic. It only records metadata: at
 * bootstrap the module finds every marked method and starts one consumer per topic; at shutdown it
 * drains them. The method is called as `(payload, job: JobContext)` with `this` the provider; resolve
 * to acknowledge, throw to retry with backoff. A method may handle several topics; a topic has one
 * handler per application. The provider must be a singleton (not request-scoped).
 *
 * `topic` is a name or a `Topic` token from `defineTopic()`: with a token the compiler checks the
 * method's payload parameter and what it resolves to against the token's types.
 *
 * @example
 * \@Injectable()
 * export class OrderHandlers {
 *   \@OnDelayed('order.expire', { concurrency: 8 })
 *   async expire({ orderId }: { orderId: string }, job: JobContext) {
 *     await this.orders.expireIfUnpaid(orderId, { signal: job.signal });
 *   }
 *
 *   \@OnDelayed('report.daily', { repeat: { cron: '0 2 * * *', timeZone: 'Europe/Warsaw' } })
 *   async dailyReport(_payload: null, job: JobContext) {
 *     await this.reports.build(job.scheduledAt); // the tick, once across all instances
 *   }
 * }
 */
export function OnDelayed(topic: string, options?: OnDelayedOptions): MethodDecorator;
export function OnDelayed<Payload, Result>(
  topic: Topic<Payload, Result>,
  options?: OnDelayedOptions<NotInferred<Payload>>,
): <Method extends DelayedJobHandler<Payload, Result>>(
  target: object,
  key: string | symbol,
  descriptor: TypedPropertyDescriptor<Method>,
) => void;
export function OnDelayed(topic: TopicRef, options?: OnDelayedOptions): MethodDecorator {
  const metadata: OnDelayedMetadata = { topic: topicName(topic), options };
  return (_target, _key, descriptor) => appendMethodMetadata(ON_DELAYED_METADATA, metadata, descriptor);
}
