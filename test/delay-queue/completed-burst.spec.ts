import type { Redis } from 'ioredis';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { rawRedis } from '../support/test-app.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import { waitFor } from '../support/timing.js';

/**
 * `keepCompleted.count` is a bound after every acknowledgement, however many jobs one call
 * acknowledges: a burst on a consumer with many slots (hundreds of acknowledgements per call) leaves
 * at most `count` completed jobs, right after it, with no trimming left for later calls; instances
 * keeping different counts; a burst aging out at once. On a Redis of its own, so that its memory is
 * these topics' alone.
 */
describe('keepCompleted under a burst', () => {
  let server: LocalRedisServer;
  let t: DelayTestApp;
  let redis: Redis;
  const topic = 'burst.kept';
  const count = 200;

  beforeAll(async () => {
    muteNestLogger('error');
    server = await startLocalRedisServer();
    t = await createDelayApp({ redis: server.url });
    redis = rawRedis(server.url);
  });
  afterAll(async () => {
    await t?.close();
    redis?.disconnect();
    await server?.stop();
  });

  /** Bytes Redis has allocated (INFO memory `used_memory`). */
  async function usedMemory(): Promise<number> {
    const info = await redis.info('memory');
    return Number(/^used_memory:(\d+)/m.exec(info)![1]);
  }

  it('holds at most count completed jobs after a burst of 20,000 on 400 slots, and Redis memory does not grow with the burst', async () => {
    let ran = 0;
    t.queue.consume<number>(
      topic,
      (n) => {
        ran++;
        return { n };
      },
      { concurrency: 400, keepCompleted: { count } },
    );
    const keys = new RedisKeySpace(t.keyPrefix).topic(topic);
    /** Schedules `n` jobs, samples stats() until they have all been acknowledged; the largest `completed` seen. */
    const burst = async (n: number): Promise<number> => {
      const target = ran + n;
      await t.queue.scheduleMany(
        topic,
        Array.from({ length: n }, (_, i) => ({ payload: i })),
      );
      let most = 0;
      await waitFor(
        async () => {
          const stats = await t.queue.stats(topic);
          most = Math.max(most, stats.completed ?? 0);
          return ran >= target && stats.due === 0 && stats.active === 0;
        },
        120_000,
        `${n} jobs to run and be acknowledged`,
      );
      return most;
    };

    // A first, small burst fills the kept set to its bound.
    const first = await burst(1_000);
    const filled = (await t.queue.stats(topic)).completed;
    const before = await usedMemory();

    const most = await burst(20_000);
    const after = await t.queue.stats(topic);
    const [jobs, results] = await Promise.all([redis.hlen(keys.jobs), redis.hlen(keys.results)]);
    const grown = (await usedMemory()) - before;

    expect({ first, filled, most, completed: after.completed, jobs, results }).toEqual({
      first: count,
      filled: count,
      most: count,
      completed: count,
      jobs: count,
      results: count,
    });
    // 20,000 kept jobs would take megabytes; 200 of them stay the same 200 as before the burst.
    expect(grown).toBeLessThan(512 * 1024);
  });

  it(
    'instances keeping different counts: never more than the largest after any acknowledgement, and ' +
      'down to the smallest at its next claims',
    async () => {
      const mixed = 'burst.mixed';
      const other = await createDelayApp({ redis: server.url, keyPrefix: t.keyPrefix });
      try {
        let ran = 0;
        const handler = (n: number) => {
          ran++;
          return n;
        };
        t.queue.consume<number>(mixed, handler, { concurrency: 200, keepCompleted: { count: 50 }, maxIdleWait: 500 });
        other.queue.consume<number>(mixed, handler, { concurrency: 200, keepCompleted: { count: 500 } });
        await t.queue.scheduleMany(
          mixed,
          Array.from({ length: 10_000 }, (_, i) => ({ payload: i })),
        );
        let most = 0;
        await waitFor(
          async () => {
            const stats = await t.queue.stats(mixed);
            most = Math.max(most, stats.completed ?? 0);
            return ran >= 10_000 && stats.due === 0 && stats.active === 0;
          },
          120_000,
          'the burst to run and be acknowledged',
        );
        expect(most).toBeLessThanOrEqual(500);
        await waitFor(async () => (await t.queue.stats(mixed)).completed === 50, 20_000, 'the smaller count to win at its next claims');
      } finally {
        await other.close();
      }
    },
  );

  it(
    'drops the jobs of a burst that age out together within a few round trips of the idle consumer’s ' +
      'next claim, not 100 per idle wake-up',
    async () => {
      const aged = 'burst.aged';
      let ran = 0;
      // An idle consumer claims every second: 100 per wake-up would take well over a minute.
      t.queue.consume<number>(
        aged,
        (n) => {
          ran++;
          return n;
        },
        { concurrency: 400, keepCompleted: { age: 1_000 }, maxIdleWait: 1_000 },
      );
      await t.queue.scheduleMany(
        aged,
        Array.from({ length: 20_000 }, (_, i) => ({ payload: i })),
      );
      await waitFor(async () => ran >= 20_000 && (await t.queue.stats(aged)).active === 0, 120_000, 'the burst to run and be acknowledged');
      const left = (await t.queue.stats(aged)).completed ?? 0;
      await waitFor(
        async () => ((await t.queue.stats(aged)).completed ?? 0) === 0,
        20_000,
        `the ${left} kept jobs left after the burst to age out and go`,
      );
      expect(await redis.exists(new RedisKeySpace(t.keyPrefix).topic(aged).jobs)).toBe(0);
    },
  );
});
