import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { rawRedis, uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import type { Redis } from 'ioredis';

/**
 * obliterate() on a Redis holding many other keys (more than a bounded SCAN walks) still finds and
 * removes every key of the topic (dead and completed sets, logs, dedupe keys, its own pause flag), and
 * the topic runs afterwards.
 */
describe('obliterate on a Redis with many other keys', () => {
  let server: LocalRedisServer;
  let t: DelayTestApp;
  let redis: Redis;
  beforeAll(async () => {
    muteNestLogger('error', 'warn');
    server = await startLocalRedisServer();
    redis = rawRedis(server.url);
    // 600,000 keys of other applications.
    for (let batch = 0; batch < 600; batch++) {
      const args: string[] = [];
      for (let i = 0; i < 1000; i++) args.push(`other:${batch}:${i}`, '1');
      await redis.mset(...args);
    }
    t = await createDelayApp({
      redis: server.url,
      keyPrefix: uniquePrefix('rev-obl-big'),
      delayQueue: { retention: { deadLetterMaxCount: 100 } },
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    redis?.disconnect();
    await server?.stop();
  });

  it('removes every key of the topic and leaves it running', async () => {
    const consumer = t.queue.consume<string>(
      'big',
      (payload, job) => {
        job.log(`ran ${payload}`);
        if (payload.startsWith('dies')) throw new Error('no');
        return payload;
      },
      { maxAttempts: 1, keepCompleted: { count: 100 } },
    );
    for (let i = 0; i < 10; i++) {
      await t.queue.schedule('big', `dies-${i}`, { dedupe: { key: `d${i}`, ttl: 600_000 } });
      await t.queue.schedule('big', `kept-${i}`);
    }
    await waitFor(
      async () => {
        const s = await t.queue.stats('big');
        return s.dead === 10 && s.completed === 10;
      },
      20_000,
      'every job to finish',
    );
    await consumer.close();
    const family = async () => (await redis.keys(`${t.keyPrefix}:dq:{big}:*`)).filter((k) => !k.endsWith(':marker')).sort();
    expect((await family()).length).toBeGreaterThan(20);

    await t.queue.obliterate('big');
    expect(await family()).toEqual([]);
    const after = await t.queue.stats('big');
    expect(after).toMatchObject({ dead: 0, paused: false });
    expect(after.completed ?? 0).toBe(0); // absent: the topic keeps no completed job any more
  }, 120_000);
});
