import { Injectable } from '@nestjs/common';
import { Redis } from 'ioredis';
import { JobContext, OnDelayed, type Consumer } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { encodeJobBody, readClaimToken, splitBody } from '../../lib/delay-queue/jobs/job-codec.js';
import { ackJobsScript } from '../../lib/delay-queue/scripts/ack-jobs.lua.js';
import { failJobScript } from '../../lib/delay-queue/scripts/fail-job.lua.js';
import { rawRedis } from '../support/test-app.js';
import { deferred, sleep, waitFor } from '../support/timing.js';
import { claimByHand } from './support/claim-by-hand.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import { useAppOnLocalRedis } from '../support/use-local-redis-server.js';
import { readThrough } from '../support/use-resource.js';

/*
 * JobContext.fencingToken: every delivery (claim) of a job gets a token greater than every token
 * handed out before for that job, from the topic shard's counter floored by the Redis server clock
 * (as the lock fences), so that a handler can fence its side effects (`... WHERE fence < :token`).
 */

const MAX_SIGNED_64 = 2n ** 63n - 1n;

/** A token as a number, after checking its shape: a decimal string that fits a signed 64-bit column. */
function tokenValue(token: string): bigint {
  expect(token).toMatch(/^[1-9]\d*$/);
  const value = BigInt(token);
  expect(value).toBeLessThanOrEqual(MAX_SIGNED_64);
  return value;
}

function expectIncreasing(tokens: readonly string[]): void {
  const values = tokens.map(tokenValue);
  for (let i = 1; i < values.length; i++) {
    if (values[i]! <= values[i - 1]!)
      throw new Error(`token ${i} (${tokens[i]}) is not above token ${i - 1} (${tokens[i - 1]}): ${tokens.join(', ')}`);
  }
}

/** The Redis server's clock in µs. */
async function serverMicros(redis: Redis): Promise<bigint> {
  const [seconds, micros] = await redis.time();
  return BigInt(seconds) * 1_000_000n + BigInt(micros);
}

function topicKeyList(keyPrefix: string, topic: string): string[] {
  const keys = new RedisKeySpace(keyPrefix).topic(topic);
  return [keys.due, keys.jobs, keys.active, keys.dead, keys.marker];
}

/** Claims up to `max` due jobs by hand, as a consumer that then stalls: returns id -> claim token. */
async function claimAsStalledConsumer(
  redis: Redis,
  keyPrefix: string,
  topic: string,
  record: string,
  max: number,
  visibility: number,
): Promise<Map<string, string>> {
  const keys = new RedisKeySpace(keyPrefix).topic(topic);
  const reply = await claimByHand(redis, keys, record, { maxClaims: max, visibilityMs: visibility, defaultMaxAttempts: 10 });
  return new Map(reply.claimed.map((job) => [job.id, readClaimToken(job.body)]));
}

describe('JobContext.fencingToken', () => {
  let app: DelayTestApp;
  let redis: Redis;
  const consumers: Consumer[] = [];

  beforeAll(async () => {
    app = await createDelayApp({ delayQueue: { backoff: { delay: 50, jitter: 0 } } });
    redis = rawRedis();
  });
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.close()));
  });
  afterAll(async () => {
    await app.close();
    redis.disconnect();
  });

  it(
    'grows with every delivery of a job: the first run and each retry get a greater token, above the ' + 'server clock at scheduling',
    async () => {
      const before = await serverMicros(redis);
      const tokens: string[] = [];
      const done = deferred();
      consumers.push(
        app.queue.consume('fence.retry', (_payload, job) => {
          tokens.push(job.fencingToken);
          if (job.attempt < 3) throw new Error(`attempt ${job.attempt} fails`);
          done.resolve();
        }),
      );
      await app.queue.schedule('fence.retry', { n: 1 }, { maxAttempts: 3 });
      await done.promise;
      expect(tokens).toHaveLength(3);
      expectIncreasing(tokens);
      expect(tokenValue(tokens[0]!)).toBeGreaterThan(before);
    },
  );

  it(
    'a redelivery after the first consumer lost its visibility gets a greater token; the stale delivery ' + 'can no longer ack or fail it',
    async () => {
      const topic = 'fence.visibility';
      const id = await app.queue.schedule(topic, 'work');
      // A consumer that claims and then stalls: it never extends its 300 ms visibility.
      const stale = (await claimAsStalledConsumer(redis, app.keyPrefix, topic, `${app.keyPrefix}:stalled-claim`, 1, 300)).get(id)!;
      expect(stale).toBeDefined();
      const seen: Array<{ attempt: number; token: string; staleAck: number; staleFail: number }> = [];
      const done = deferred();
      consumers.push(
        app.queue.consume(topic, async (_payload, job) => {
          const keys = topicKeyList(app.keyPrefix, topic);
          const ack = { keepsCompleted: false, keepCount: 0, keepAgeMs: 0 };
          const topicKeys = new RedisKeySpace(app.keyPrefix).topic(topic);
          const { acked: staleAck } = await ackJobsScript.call(redis, topicKeys, ack, [{ id, token: stale, result: '' }]);
          const staleFail = await failJobScript.run<number>(redis, keys, [id, stale, 0, '"stale"', 100, 86_400_000]);
          seen.push({ attempt: job.attempt, token: job.fencingToken, staleAck, staleFail });
          done.resolve();
        }),
      );
      await done.promise;
      expect(seen).toEqual([{ attempt: 2, token: expect.any(String), staleAck: 0, staleFail: 0 }]);
      expectIncreasing([stale, seen[0]!.token]);
      await waitFor(async () => (await app.queue.get(topic, id)) === null, 10_000, 'the redelivery to be acknowledged');
    },
  );

  it('a job replaced under the same id while running: the new delivery gets a greater token than the replaced one', async () => {
    const topic = 'fence.replace';
    const deliveries: Array<{ payload: string; token: string; aborted: boolean }> = [];
    const firstRunning = deferred();
    const second = deferred();
    consumers.push(
      app.queue.consume(
        topic,
        async (payload: string, job) => {
          if (payload === 'old') {
            firstRunning.resolve();
            await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve(), { once: true }));
            deliveries.push({ payload, token: job.fencingToken, aborted: job.signal.aborted });
            return;
          }
          deliveries.push({ payload, token: job.fencingToken, aborted: false });
          second.resolve();
        },
        { visibilityTimeout: 1_500 },
      ), // the replaced run learns it at its next extension (every 500 ms)
    );
    await app.queue.schedule(topic, 'old', { id: 'order-7' });
    await firstRunning.promise;
    await app.queue.schedule(topic, 'new', { id: 'order-7', replace: true });
    await second.promise;
    await waitFor(() => deliveries.length === 2, 10_000, 'the replaced run to see its abort');
    const byPayload = Object.fromEntries(deliveries.map((d) => [d.payload, d]));
    expect(byPayload.old!.aborted).toBe(true);
    expectIncreasing([byPayload.old!.token, byPayload.new!.token]);
  });

  it('orders the tokens of one topic by claim, and a claim run twice answers with the same tokens and steps the counter once', async () => {
    const topic = 'fence.twice';
    const ids = await app.queue.scheduleMany(
      topic,
      [1, 2, 3].map((n) => ({ payload: n })),
    );
    const record = `${app.keyPrefix}:dq:{${topic}}:op:by-hand`;
    const first = await claimAsStalledConsumer(redis, app.keyPrefix, topic, record, 3, 30_000);
    const counterAfterFirst = await redis.get(new RedisKeySpace(app.keyPrefix).topic(topic).fence);
    const second = await claimAsStalledConsumer(redis, app.keyPrefix, topic, record, 3, 30_000);
    expect([...first.keys()].sort()).toEqual([...ids].sort());
    expect(second).toEqual(first);
    const tokens = [...first.values()];
    expectIncreasing(tokens);
    // The counter holds the last token given, and the second run did not move it.
    expect(counterAfterFirst).toBe(tokens[tokens.length - 1]);
    expect(await redis.get(new RedisKeySpace(app.keyPrefix).topic(topic).fence)).toBe(counterAfterFirst);
    // A later claim of the topic is above all of them.
    const later = await app.queue.schedule(topic, 4);
    const next = await claimAsStalledConsumer(redis, app.keyPrefix, topic, `${record}:2`, 1, 30_000);
    expectIncreasing([...tokens, next.get(later)!]);
  });

  it('keeps the topic counter with a bounded retention (it expires some time after the last claim)', async () => {
    const topic = 'fence.retention';
    await app.queue.schedule(topic, 1);
    await claimAsStalledConsumer(redis, app.keyPrefix, topic, `${app.keyPrefix}:retention-claim`, 1, 1_000);
    const ttl = await redis.pttl(new RedisKeySpace(app.keyPrefix).topic(topic).fence);
    expect(ttl).toBeGreaterThan(60_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000);
  });
});

describe('JobContext.fencingToken after Redis lost the counter', () => {
  const onServer = useAppOnLocalRedis(
    async (server) => ({
      delay: await createDelayApp({ redis: server.url }),
      redis: new Redis(server.url, { maxRetriesPerRequest: null }),
    }),
    async ({ delay, redis }) => {
      await delay.close();
      redis.disconnect();
    },
  );
  const app = readThrough('the delay app', () => onServer.app.delay);
  const redis = readThrough('the plain client', () => onServer.app.redis);
  const { server } = onServer;

  /** Schedules job `id` on `topic` and returns the token its delivery got (it is then acknowledged). */
  async function deliver(topic: string, id: string): Promise<string> {
    const got = deferred<string>();
    const consumer = app.queue.consume(topic, (_payload, job) => got.resolve(job.fencingToken));
    try {
      await waitFor(() => app.queue.schedule(topic, 'x', { id }).then(() => true), 20_000, 'the job to be scheduled', {
        retryErrors: true,
      });
      return await got.promise;
    } finally {
      await consumer.close();
    }
  }

  it(
    'a new delivery of the same job id is still above every earlier token after the counter was deleted, ' +
      'after FLUSHALL and after a restart without persistence',
    async () => {
      const topic = 'fence.lost';
      const fenceKey = new RedisKeySpace(app.keyPrefix).topic(topic).fence;
      const tokens = [await deliver(topic, 'order-1'), await deliver(topic, 'order-1')];
      expect(await redis.get(fenceKey)).toBe(tokens[1]);

      await redis.del(fenceKey);
      tokens.push(await deliver(topic, 'order-1'));

      await redis.flushall();
      tokens.push(await deliver(topic, 'order-1'));

      await server.restart();
      await waitFor(() => redis.ping().then(() => true), 20_000, 'Redis back', { retryErrors: true });
      expect(await redis.exists(fenceKey)).toBe(0);
      tokens.push(await deliver(topic, 'order-1'));
      expectIncreasing(tokens);
    },
  );

  it(
    'a job whose last token is ahead of the clock and of a lost counter gets its last token + 1 (a clock ' +
      'set back after the counter was lost)',
    async () => {
      const topic = 'fence.job-floor';
      const keys = new RedisKeySpace(app.keyPrefix).topic(topic);
      const id = await app.queue.schedule(topic, 'x', { id: 'order-9' });
      const stale = (await claimAsStalledConsumer(redis, app.keyPrefix, topic, `${app.keyPrefix}:job-floor-claim`, 1, 200)).get(id)!;
      // As if the server clock had gone back an hour since that claim, and the counter had been lost.
      const ahead = BigInt(stale) + 3_600_000_000n;
      const { fields, payloadJson } = splitBody((await redis.hget(keys.jobs, id))!)!;
      expect(fields.token).toBe(stale);
      await redis.hset(keys.jobs, id, encodeJobBody({ ...fields, token: ahead.toString() }, payloadJson));
      await redis.del(keys.fence);
      const got = deferred<string>();
      const consumer = app.queue.consume(topic, (_payload, job) => got.resolve(job.fencingToken));
      try {
        expect(await got.promise).toBe((ahead + 1n).toString());
      } finally {
        await consumer.close();
      }
    },
  );

  it('a counter ahead of the server clock (more than one claim per µs, or a clock set back) still steps by one', async () => {
    const topic = 'fence.ahead';
    const fenceKey = new RedisKeySpace(app.keyPrefix).topic(topic).fence;
    const ahead = (await serverMicros(redis)) + 3_600_000_000n; // an hour ahead of the clock
    await redis.set(fenceKey, ahead.toString(), 'PX', 3_600_000);
    expect(await deliver(topic, 'a')).toBe((ahead + 1n).toString());
    expect(await deliver(topic, 'b')).toBe((ahead + 2n).toString());
  });
});

@Injectable()
class OrderRepository {
  readonly writes: Array<{ orderId: string; fence?: string; topic?: string }> = [];

  /** Several calls below the handler, with no `job` passed along. */
  async markShipped(orderId: string): Promise<void> {
    await sleep(5);
    await new Promise<void>((resolve) => setTimeout(resolve, 5));
    const job = JobContext.current();
    this.writes.push({ orderId, fence: job?.fencingToken, topic: job?.topic });
  }
}

@Injectable()
class ShippingHandlers {
  readonly jobs: JobContext[] = [];
  constructor(private readonly orders: OrderRepository) {}

  @OnDelayed('fence.ship', { concurrency: 4 })
  async ship(orderId: string, job: JobContext): Promise<void> {
    this.jobs.push(job);
    await this.orders.markShipped(orderId);
  }
}

describe('JobContext.current()', () => {
  let app: DelayTestApp;

  beforeAll(async () => {
    app = await createDelayApp({}, [OrderRepository, ShippingHandlers]);
  });
  afterAll(async () => {
    await app.close();
  });

  it('is undefined outside a handler', () => {
    expect(JobContext.current()).toBeUndefined();
  });

  it('gives an @OnDelayed handler’s own delivery anywhere below it, concurrent deliveries each their own', async () => {
    const orders = app.app.get(OrderRepository);
    const handlers = app.app.get(ShippingHandlers);
    const ids = ['o1', 'o2', 'o3', 'o4'];
    await app.queue.scheduleMany(
      'fence.ship',
      ids.map((id) => ({ payload: id, id: `ship-${id}` })),
    );
    await waitFor(() => orders.writes.length === ids.length, 10_000, 'four shipments');
    const tokenOf = new Map(handlers.jobs.map((job) => [job.id, job.fencingToken]));
    expect(
      orders.writes
        .map((write) => ({ ...write, fence: write.fence === tokenOf.get(`ship-${write.orderId}`) }))
        .sort((a, b) => a.orderId.localeCompare(b.orderId)),
    ).toEqual(ids.map((orderId) => ({ orderId, fence: true, topic: 'fence.ship' })));
    expect(JobContext.current()).toBeUndefined();
  });

  it('is the handler’s `job` argument: id, topic, attempt, fencingToken and signal of the running delivery', async () => {
    const seen = deferred<{ same: boolean; current?: JobContext }>();
    const consumer = app.queue.consume('fence.current', async (_payload, job) => {
      await sleep(1);
      const current = JobContext.current();
      seen.resolve({ same: current === job, current });
    });
    const id = await app.queue.schedule('fence.current', 1);
    const { same, current } = await seen.promise;
    await consumer.close();
    expect(same).toBe(true);
    expect(current).toMatchObject({ id, topic: 'fence.current', attempt: 1, fencingToken: expect.stringMatching(/^\d+$/) });
    expect(current!.signal).toBeInstanceOf(AbortSignal);
  });
});
