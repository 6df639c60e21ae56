import { assertValidTopic } from '../core/keys/topic-name.js';

/**
 * A delayed-job topic with the types of its payload and of its handler's result, made by
 * `defineTopic()`. Accepted wherever a topic name is (`DelayQueueService`, `@OnDelayed`,
 * `@OnJobEvent`): there the compiler checks payloads, handlers and results against these types. At
 * run time it is its `name` and nothing else: a job scheduled through the token is consumed by a
 * handler of the plain name, and the other way round.
 *
 * @example
 * export const orderExpire = defineTopic<{ orderId: string }, { expired: boolean }>('order.expire');
 */
export interface Topic<Payload = unknown, Result = void> {
  /** The topic's name, as in Redis keys, events and logs (validated by `defineTopic()`). */
  readonly name: string;
  /**
   * Carries the payload and result types for the compiler only: never set at run time (`undefined`).
   */
  readonly types?: {
    /** The payload type jobs of the topic carry. */
    readonly payload: Payload;
    /** The type the topic's handler resolves to. */
    readonly result: Result;
  };
}

/**
 * A topic as the API takes it: its plain name, or a `Topic` token from `defineTopic()` (whose types
 * are then checked). `TopicRef<P, R>` reads "a topic whose payload is P and whose result is R".
 */
export type TopicRef<Payload = unknown, Result = unknown> = string | Topic<Payload, Result>;

/**
 * `T` as the type of a parameter the compiler does not infer `T` from: the call's `Topic` token alone
 * fixes `T`, and this argument is then checked against it. Without it, a payload or handler of a
 * wider type (`{ orderId?: string }` for `{ orderId: string }`, `unknown`) would widen `T` until the
 * token fitted too (a `Topic` is covariant in its types). With a plain name `T` is `unknown` (any
 * payload) unless given explicitly. TypeScript's own `NoInfer<T>` (5.4+), spelled to work from 5.0.
 */
export type NotInferred<T> = [T][T extends unknown ? 0 : never];

/**
 * Defines a typed topic: a token carrying the payload type and the handler's result type, to pass
 * wherever a topic name goes. A wrong payload, a handler taking another payload or returning another
 * result, fails to compile. Define it once (e.g. beside the handler) and import it where jobs are
 * scheduled.
 *
 * @throws InvalidTopicError for a name that is not a valid topic (checked here, once)
 *
 * @example
 * export const invoiceSend = defineTopic<{ invoiceId: string }, { messageId: string }>('invoice.send');
 *
 * await delayQueue.schedule(invoiceSend, { invoiceId: 'inv-1' }, { delay: 60_000 });
 * await delayQueue.schedule(invoiceSend, { invoice: 1 }); // compile error: not the payload type
 *
 * \@OnDelayed(invoiceSend)
 * async send({ invoiceId }: { invoiceId: string }): Promise<{ messageId: string }> { ... }
 */
export function defineTopic<Payload, Result = void>(name: string): Topic<Payload, Result> {
  assertValidTopic(name, 'defineTopic()');
  return Object.freeze({ name });
}

/**
 * The name a topic reference stands for: the one conversion of a `TopicRef` into the string the
 * rest of the library works with. Not validated here (the callers validate names as before); an
 * object without a string `name` yields what it holds, which their validation then refuses.
 */
export function topicName(topic: TopicRef): string {
  return typeof topic === 'object' && topic !== null ? topic.name : topic;
}
