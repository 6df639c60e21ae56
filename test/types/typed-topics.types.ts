/**
 * Compile-time specification of `defineTopic()` tokens and `@OnJobEvent` payloads: never run, only
 * type-checked by `npm run typecheck` (tsconfig.json includes test/). Each `@ts-expect-error` line
 * must fail to compile (a wrong payload, handler or result); if it ever compiles, `tsc` fails with
 * "Unused '@ts-expect-error' directive". The lines without it must compile.
 */
import {
  defineTopic,
  DelayQueueService,
  OnDelayed,
  OnJobEvent,
  type DelayedJob,
  type JobContext,
  type JobFailedEvent,
  type JobSucceededEvent,
  type RepeatOptions,
  type Topic,
  type TopicRef,
} from 'nestjs-redis-lock';

interface Order {
  orderId: string;
}
interface Expiry {
  expired: boolean;
}

const orderExpire: Topic<Order, Expiry> = defineTopic<Order, Expiry>('order.expire');
const orderPlaced = defineTopic<Order>('order.placed');

export async function producers(queue: DelayQueueService): Promise<void> {
  await queue.schedule(orderExpire, { orderId: 'o-1' });
  await queue.scheduleWithResult(orderExpire, { orderId: 'o-1' }, { delay: 10 });
  await queue.scheduleMany(orderExpire, [{ payload: { orderId: 'o-1' } }, { payload: { orderId: 'o-2' }, delay: 5 }]);
  await queue.scheduleManyWithResult(orderPlaced, [{ payload: { orderId: 'o-3' } }]);
  await queue.repeat(orderExpire, { every: 1000 }, { payload: { orderId: 'o-4' } });
  // A plain name checks nothing, as before.
  await queue.schedule('order.expire', { anything: 1 });

  // @ts-expect-error a payload of another type
  await queue.schedule(orderExpire, { order: 1 });
  // @ts-expect-error a missing payload property
  await queue.scheduleWithResult(orderExpire, {});
  // @ts-expect-error a wrong payload in a batch
  await queue.scheduleMany(orderExpire, [{ payload: { orderId: 1 } }]);
  // @ts-expect-error a wrong payload in a batch with results
  await queue.scheduleManyWithResult(orderExpire, [{ payload: 'o-1' }]);
  // @ts-expect-error a wrong repeat payload
  await queue.repeat(orderExpire, { every: 1000 }, { payload: { id: 'o-4' } });
  // A payload type that includes null or undefined (void): the payload may be left out.
  await queue.repeat(defineTopic<Order | null>('order.sweep'), { every: 1000 });
  await queue.repeat(defineTopic<void>('order.tick'), { every: 1000 });
  await queue.repeat(defineTopic<undefined>('order.tick2'), { every: 1000 }, { id: 'x' });
  // Options typed on their own need the payload written into their type.
  const typedOptions: RepeatOptions<Order> & { payload: Order } = { id: 'o', payload: { orderId: 'o-9' } };
  await queue.repeat(orderExpire, { every: 1000 }, typedOptions);
  await queue.repeat('order.any', { every: 1000 });
  // @ts-expect-error a repeat of a typed topic without its payload (each tick would carry null)
  await queue.repeat(orderExpire, { every: 1000 });
  // @ts-expect-error options without the payload
  await queue.repeat(orderExpire, { every: 1000 }, { id: 'x' });

  // A payload is checked against the token's type: a value of a WIDER static type is refused too (the
  // payload is not a place the payload type is inferred from), not only a fresh literal of another type.
  const draft: { orderId?: string } = {};
  const either: number | Order = 1;
  const anything: unknown = {};
  const someObject: object = {};
  // @ts-expect-error a payload whose property is optional
  await queue.schedule(orderExpire, draft);
  // @ts-expect-error a payload that may be a number
  await queue.schedule(orderExpire, either);
  // @ts-expect-error a payload of unknown type
  await queue.schedule(orderExpire, anything);
  // @ts-expect-error any object
  await queue.schedule(orderExpire, someObject);
  // @ts-expect-error a wider payload, with results
  await queue.scheduleWithResult(orderExpire, draft);
  // @ts-expect-error a wider payload in a batch
  await queue.scheduleMany(orderExpire, [{ payload: draft }]);
  // @ts-expect-error a wider payload in a batch with results
  await queue.scheduleManyWithResult(orderExpire, [{ payload: { orderId: 'o-1' } }, { payload: anything }]);
  // @ts-expect-error a wider new payload
  await queue.updatePayload(orderExpire, 'o-1', draft);
  // @ts-expect-error a wider repeat payload
  await queue.repeat(orderExpire, { every: 1000 }, { payload: draft });
  // A value of the topic's type, or of a narrower one, is a payload.
  const placed: Order & { placedAt: number } = { orderId: 'o-5', placedAt: 1 };
  await queue.schedule(orderExpire, placed);
  await queue.scheduleMany(orderExpire, [{ payload: placed }]);
  await queue.updatePayload(orderExpire, 'o-5', placed);
  // A topic of a union payload takes each member.
  const orderEvent = defineTopic<{ kind: 'placed'; orderId: string } | { kind: 'paid'; amount: number }>('order.event');
  await queue.schedule(orderEvent, { kind: 'paid', amount: 5 });
  // @ts-expect-error a member's property of another member
  await queue.schedule(orderEvent, { kind: 'paid', orderId: 'o-1' });
  // A name or a token, typed as TopicRef, checks the token's types too.
  const ref: TopicRef<Order, Expiry> = orderExpire;
  await queue.schedule(ref, { orderId: 'o-6' });
  // @ts-expect-error a wider payload through a TopicRef
  await queue.schedule(ref, draft);
  // A plain name takes any payload, of any static type, as before; an explicit type argument checks it.
  await queue.schedule('order.expire', draft);
  await queue.schedule('order.expire', anything);
  await queue.scheduleMany('order.expire', [{ payload: either }, { payload: 'text' }]);
  await queue.updatePayload('order.expire', 'o-1', someObject);
  await queue.repeat('order.expire', { every: 1000 }, { payload: anything });
  await queue.schedule<Order>('order.expire', { orderId: 'o-7' });
  // @ts-expect-error an explicit payload type checks a plain name's payload
  await queue.schedule<Order>('order.expire', draft);

  const job = await queue.get(orderExpire, 'o-1');
  const payload: Order | undefined = job?.payload;
  const result: Expiry | undefined = job?.result;
  // @ts-expect-error the result is typed as the topic's Result
  const notAString: string | undefined = job?.result;
  const dead: Array<DelayedJob<Order>> = await queue.deadLetters(orderExpire);
  const waited: Expiry | undefined = await queue.waitFor(orderExpire, 'o-1', { timeout: 1000 });
  // @ts-expect-error waitFor resolves to the topic's Result (or undefined)
  const waitedWrong: string | undefined = await queue.waitFor(orderExpire, 'o-1');
  const waitedByName: unknown = await queue.waitFor('order.expire', 'o-1');
  void [payload, result, notAString, dead, waited, waitedWrong, waitedByName];

  // Every other call takes the token too.
  await queue.cancel(orderExpire, 'o-1');
  await queue.reschedule(orderExpire, 'o-1', { delay: 5 });
  await queue.stats(orderExpire);
  await queue.pause(orderExpire);
  await queue.resume(orderExpire);
  await queue.retryDead(orderExpire);
  await queue.removeRepeat(orderExpire);
  await queue.listRepeats(orderExpire);
  await queue.updatePayload(orderExpire, 'o-1', { orderId: 'o-9' });
  // @ts-expect-error a new payload of another type
  await queue.updatePayload(orderExpire, 'o-1', { orderId: 9 });
  const page = await queue.list(orderExpire, { state: 'dead', limit: 10 });
  const listed: Array<DelayedJob<Order>> = page.jobs;
  // @ts-expect-error listed jobs carry the topic's payload type
  const listedWrong: Array<DelayedJob<{ id: number }>> = page.jobs;
  void [listed, listedWrong];
  await queue.drain(orderExpire);
  await queue.clean(orderExpire, { state: 'completed', olderThan: 60_000 });
  await queue.obliterate(orderExpire, { force: true });
}

export function consumers(queue: DelayQueueService): void {
  queue.consume(orderExpire, async ({ orderId }, job: JobContext) => ({ expired: orderId.length > job.attempt }));
  queue.consume(orderPlaced, () => undefined);
  // @ts-expect-error a handler taking another payload
  queue.consume(orderExpire, async (payload: { id: number }) => ({ expired: payload.id > 0 }));
  // @ts-expect-error a handler resolving to another result
  queue.consume(orderExpire, async () => ({ expired: 'yes' }));
  // The handler is checked against the token's types: its result may not be wider either.
  // @ts-expect-error a handler that may resolve to undefined
  queue.consume(orderExpire, async () => (Math.random() > 0.5 ? { expired: true } : undefined));
  // @ts-expect-error a handler that may resolve to a string
  queue.consume(orderExpire, async (order) => (order.orderId ? { expired: true } : 'no'));
  // @ts-expect-error a synchronous handler resolving to a wider result
  queue.consume(orderExpire, (): Expiry | null => null);
  // @ts-expect-error a handler of a topic without a result resolving to one
  queue.consume(orderPlaced, async () => 1);
  // An untyped handler's parameters are the token's; a handler taking a wider payload is fine.
  queue.consume(orderExpire, (order, job) => ({ expired: order.orderId === job.id }));
  queue.consume(orderExpire, async (_order: { orderId?: string }) => ({ expired: false }));
  const ref: TopicRef<Order, Expiry> = orderExpire;
  // @ts-expect-error a TopicRef checks the handler too
  queue.consume(ref, async () => undefined);
  // A plain name: any handler, as before, with its own types or explicit ones.
  queue.consume('order.any', async (payload: { id: number }) => payload.id);
  queue.consume('order.any', async (payload) => payload);
  queue.consume<Order>('order.any', async ({ orderId }) => orderId);
  // @ts-expect-error an explicit payload type checks a plain name's handler
  queue.consume<Order>('order.any', async (payload: { id: number }) => payload.id);
}

export class Handlers {
  @OnDelayed(orderExpire)
  async expire({ orderId }: Order, job: JobContext): Promise<Expiry> {
    return { expired: orderId !== job.id };
  }

  @OnDelayed(orderPlaced, { concurrency: 2 })
  placed(_order: Order): void {}

  // @ts-expect-error a handler of the token taking another payload
  @OnDelayed(orderExpire)
  async wrongPayload(_payload: { id: number }): Promise<Expiry> {
    return { expired: true };
  }

  // @ts-expect-error a handler of the token resolving to another result
  @OnDelayed(orderExpire)
  async wrongResult(_payload: Order): Promise<string> {
    return 'expired';
  }

  // @ts-expect-error a handler of the token that may resolve to undefined
  @OnDelayed(orderExpire)
  async maybeResult(_payload: Order): Promise<Expiry | undefined> {
    return undefined;
  }

  @OnDelayed(orderExpire, { repeat: { every: 1000, payload: { orderId: 'tick' } } })
  async tick(_payload: Order): Promise<Expiry> {
    return { expired: false };
  }

  // @ts-expect-error a repeat payload of another type than the token's
  @OnDelayed(orderExpire, { repeat: { every: 1000, payload: { id: 1 } } })
  async wrongTick(_payload: Order): Promise<Expiry> {
    return { expired: false };
  }

  @OnDelayed(defineTopic<void>('order.heartbeat'), { repeat: { every: 1000 } })
  async heartbeat(): Promise<void> {}

  // @ts-expect-error a repeat of a typed topic without its payload (each tick would carry null)
  @OnDelayed(orderExpire, { repeat: { every: 1000 } })
  async tickWithoutPayload(_payload: Order): Promise<Expiry> {
    return { expired: false };
  }

  @OnDelayed('order.any', { repeat: { every: 1000, payload: { anything: true } } })
  anyTick(): void {}

  // A plain name: any handler, as before.
  @OnDelayed('order.any')
  any(_payload: { whatever: boolean }): number {
    return 1;
  }
}

export class Listeners {
  @OnJobEvent(orderExpire, 'completed')
  completed({ result }: JobSucceededEvent<Expiry>): boolean {
    return result.expired;
  }

  @OnJobEvent(orderExpire, 'failed')
  failed(_event: JobFailedEvent): void {}

  @OnJobEvent('order.any', 'completed')
  completedByName(_event: JobSucceededEvent<{ anything: number }>): void {}

  // @ts-expect-error 'completed' of this token carries an Expiry result
  @OnJobEvent(orderExpire, 'completed')
  wrongResult(_event: JobSucceededEvent<string>): void {}

  // @ts-expect-error a 'completed' listener taking the payload of 'failed'
  @OnJobEvent(orderExpire, 'completed')
  wrongEvent(_event: JobFailedEvent): void {}

  // @ts-expect-error a 'dead' listener taking the payload of 'completed', by plain name too
  @OnJobEvent('order.any', 'dead')
  wrongEventByName(_event: JobSucceededEvent): void {}

  // @ts-expect-error not an event of @OnJobEvent
  @OnJobEvent(orderExpire, 'finished')
  unknownEvent(): void {}
}
