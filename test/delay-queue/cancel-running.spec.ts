import { jest } from '@jest/globals';
import { Redis } from 'ioredis';
import { JobCancelledError, RedisLockEvents, type Consumer, type JobContext, type RedisLockEventMap } from '../../lib/index.js';
import { RedisKeySpace, type TopicKeys } from '../../lib/core/keys/redis-key-space.js';
import { CancelListener } from '../../lib/delay-queue/consumer/cancel-listener.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import { uniquePrefix, useRawRedis } from '../support/test-app.js';
import { deferred, waitFor, within } from '../support/timing.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';

/**
 * `cancel(topic, id)` of a running job, from any instance: the instance running it aborts the
 * handler's `job.signal` with JobCancelledError, through a pub/sub notice (well before any visibility
 * extension), or at its next extension when the notice is lost; the job is then gone, whatever the
 * handler does next: not retried, not dead-lettered, reported as `job.cancelled` only.
 */

/** Visibility long enough that no extension (every third of it) comes within a test: only the notice can abort. */
const NO_EXTENSION_SOON = { visibilityTimeout: 60_000 };

type Outcome = 'job.cancelled' | 'job.succeeded' | 'job.failed' | 'job.retried' | 'job.dead';
const OUTCOMES: readonly Outcome[] = ['job.cancelled', 'job.succeeded', 'job.failed', 'job.retried', 'job.dead'];

/** The job outcome events an app emits for `topic`, as `<event> <instance>`. */
function recordOutcomes(app: DelayTestApp, instance: string, topic: string, into: string[]): void {
  const events = app.app.get(RedisLockEvents);
  for (const name of OUTCOMES) {
    events.on(name, (event: RedisLockEventMap[Outcome]) => {
      if (event.topic === topic) into.push(`${name} ${instance}`);
    });
  }
}

/** A handler that reports its start and waits for its signal to abort, then returns or throws. */
function abortAwaitingHandler(
  instance: string,
  started: (run: { instance: string; job: JobContext }) => void,
  after: 'returns' | 'throws',
) {
  return async (_payload: unknown, job: JobContext): Promise<void> => {
    started({ instance, job });
    await new Promise((resolve) => job.signal.addEventListener('abort', resolve, { once: true }));
    if (after === 'throws') throw new Error('the handler fails after its abort');
  };
}

failOnUnhandledRejections();

describe('Cancelling a running job from any instance', () => {
  const redis = useRawRedis();
  let a: DelayTestApp;
  let b: DelayTestApp;
  let c: DelayTestApp;
  let keys: RedisKeySpace;

  beforeAll(async () => {
    muteNestLogger('error');
    const keyPrefix = uniquePrefix('cancel');
    keys = new RedisKeySpace(keyPrefix);
    [a, b, c] = await Promise.all([1, 2, 3].map(() => createDelayApp({ keyPrefix, delayQueue: { maxAttempts: 1 } })));
  });
  afterAll(async () => {
    await Promise.all([a, b, c].map((t) => t?.close()));
    jest.restoreAllMocks();
  });

  /** Waits until `count` subscribers listen on the topic's cancel channel (the instances' subscriptions landed). */
  async function listeners(topicKeys: TopicKeys, count: number): Promise<void> {
    await waitFor(
      async () => ((await redis.pubsub('NUMSUB', topicKeys.cancelChannel)) as [string, number])[1] === count,
      5_000,
      `${count} subscriber(s) on ${topicKeys.cancelChannel}`,
    );
  }

  it.each(['throws', 'returns'] as const)(
    'aborts the signal where the job runs, within a pub/sub round trip, and the job is gone even if the handler %s after the abort',
    async (after) => {
      const topic = `running-${after}`;
      const topicKeys = keys.topic(topic);
      const outcomes: string[] = [];
      recordOutcomes(a, 'a', topic, outcomes);
      recordOutcomes(b, 'b', topic, outcomes);
      const started = deferred<{ instance: string; job: JobContext }>();
      const consumers: Consumer[] = [
        a.queue.consume(topic, abortAwaitingHandler('a', started.resolve, after), NO_EXTENSION_SOON),
        b.queue.consume(topic, abortAwaitingHandler('b', started.resolve, after), NO_EXTENSION_SOON),
      ];
      await listeners(topicKeys, 2);
      const id = await c.queue.schedule(topic, { n: 1 });
      const { instance, job } = await started.promise;
      expect(job.signal.aborted).toBe(false);
      const aborted = new Promise((resolve) => job.signal.addEventListener('abort', () => resolve(job.signal.reason), { once: true }));

      expect(await c.queue.cancel(topic, id)).toBe(true);
      // The first extension would come 20 s after the claim: an abort within seconds came from the notice.
      const reason = await within(aborted, 5_000, 'the abort of the running handler');
      expect(reason).toBeInstanceOf(JobCancelledError);
      expect(reason).toMatchObject({ code: 'JOB_CANCELLED', topic, jobId: id });

      await waitFor(() => outcomes.length > 0, 5_000, 'the outcome event of the handler');
      await Promise.all(consumers.map((consumer) => consumer.close()));
      expect(outcomes).toEqual([`job.cancelled ${instance}`]);
      expect(await c.queue.get(topic, id)).toBeNull();
      expect(await c.queue.deadLetters(topic)).toEqual([]);
      expect(await c.queue.stats(topic)).toMatchObject({ scheduled: 0, due: 0, active: 0, dead: 0 });
    },
  );

  it('still aborts with JobCancelledError at the next visibility extension when the notice is lost', async () => {
    const topic = 'notice-lost';
    const topicKeys = keys.topic(topic);
    const outcomes: string[] = [];
    recordOutcomes(a, 'a', topic, outcomes);
    const started = deferred<{ instance: string; job: JobContext }>();
    const consumer = a.queue.consume(topic, abortAwaitingHandler('a', started.resolve, 'throws'), { visibilityTimeout: 900 });
    await listeners(topicKeys, 1);
    // The instance's subscriber goes away: no notice can reach it any more.
    a.app.get(CancelListener).close();
    await listeners(topicKeys, 0);
    const id = await c.queue.schedule(topic, 'x');
    const { job } = await started.promise;
    const aborted = new Promise((resolve) => job.signal.addEventListener('abort', () => resolve(job.signal.reason), { once: true }));

    expect(await c.queue.cancel(topic, id)).toBe(true);
    const reason = await within(aborted, 5_000, 'the abort at the next visibility extension');
    expect(reason).toBeInstanceOf(JobCancelledError);
    await waitFor(() => outcomes.length > 0, 5_000, 'the outcome event of the handler');
    await consumer.close();
    expect(outcomes).toEqual(['job.cancelled a']);
    expect(await c.queue.stats(topic)).toMatchObject({ scheduled: 0, due: 0, active: 0, dead: 0 });
  });

  it('aborts a job cancelled before its instance had subscribed to the cancel channel, as soon as the SUBSCRIBE is confirmed', async () => {
    const topic = 'cancelled-before-subscribed';
    const topicKeys = keys.topic(topic);
    // The fresh instance's SUBSCRIBE to this topic's channel is held back (a slow link) until released.
    const released = deferred();
    const subscribe = Redis.prototype.subscribe as (...args: unknown[]) => Promise<unknown>;
    const spy = jest.spyOn(Redis.prototype, 'subscribe').mockImplementation(function (this: Redis, ...args: unknown[]) {
      if (args[0] !== topicKeys.cancelChannel) return subscribe.apply(this, args);
      return released.promise.then(() => subscribe.apply(this, args));
    } as never);
    const d = await createDelayApp({ keyPrefix: keys.prefix, delayQueue: { maxAttempts: 1 } });
    try {
      const outcomes: string[] = [];
      recordOutcomes(d, 'd', topic, outcomes);
      const started = deferred<{ instance: string; job: JobContext }>();
      const consumer = d.queue.consume(topic, abortAwaitingHandler('d', started.resolve, 'returns'), NO_EXTENSION_SOON);
      const id = await c.queue.schedule(topic, 'x');
      const { job } = await started.promise;
      const aborted = new Promise((resolve) => job.signal.addEventListener('abort', () => resolve(job.signal.reason), { once: true }));
      // Published while nobody listens: the notice is lost.
      expect(await c.queue.cancel(topic, id)).toBe(true);
      expect(job.signal.aborted).toBe(false);
      released.resolve();
      await listeners(topicKeys, 1);
      // The first extension would come 20 s after the claim: an abort within seconds came from the check after the SUBSCRIBE.
      expect(await within(aborted, 5_000, 'the abort once the subscription is confirmed')).toBeInstanceOf(JobCancelledError);
      await waitFor(() => outcomes.length > 0, 5_000, 'the outcome event of the handler');
      await consumer.close();
      expect(outcomes).toEqual(['job.cancelled d']);
    } finally {
      spy.mockRestore();
      released.resolve();
      await d.close();
    }
  });

  it('keeps a tombstone only until the cancelled claim would have expired', async () => {
    const topic = 'tombstone';
    const topicKeys = keys.topic(topic);
    const started = deferred<{ instance: string; job: JobContext }>();
    const consumer = b.queue.consume(topic, abortAwaitingHandler('b', started.resolve, 'returns'), { visibilityTimeout: 2_000 });
    const id = await c.queue.schedule(topic, 'x');
    await started.promise;
    expect(await c.queue.cancel(topic, id)).toBe(true);
    const ttl = await redis.pttl(topicKeys.cancelled);
    // The claim's visibility deadline (at most 2 s away) plus the 5 s margin.
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(7_000);
    expect(await redis.zcard(topicKeys.cancelled)).toBe(1);
    await consumer.close();
  });

  it('cancels a waiting job as before: gone, nothing announced, no tombstone', async () => {
    const topic = 'waiting';
    const topicKeys = keys.topic(topic);
    const id = await c.queue.schedule(topic, 'later', { delay: 60_000 });
    expect(await c.queue.cancel(topic, id)).toBe(true);
    expect(await c.queue.get(topic, id)).toBeNull();
    expect(await c.queue.cancel(topic, id)).toBe(false);
    expect(await redis.exists(topicKeys.cancelled)).toBe(0);
  });
});
