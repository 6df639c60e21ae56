import type { TestingModule } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { LockService } from '../../lib/index.js';
import { FAIR_WAITER_LIVENESS_MS } from '../../lib/lock/protocols/fair-lock.protocol.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { createLockApp, rawRedis, testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { holdsWithin } from '../support/timing.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

/** A fair lock's wait queue in Redis is bounded: a waiter that dies leaves nothing behind for good. */
describe('fair lock: the wait queue of a dead waiter expires', () => {
  let proxy: FaultProxy;
  let holderApp: TestingModule;
  let waiterApp: TestingModule;
  let redis: Redis;
  let keyPrefix: string;

  beforeAll(async () => {
    keyPrefix = uniquePrefix('fairq');
    proxy = await FaultProxy.start({ port: Number(new URL(testRedisUrl()).port) });
    [holderApp, waiterApp] = await Promise.all([
      createLockApp({ keyPrefix, lock: { fair: true } }),
      createLockApp({ keyPrefix, redis: proxy.url, lock: { fair: true } }),
    ]);
    waiterApp.useLogger(false);
    redis = rawRedis();
  });
  afterAll(async () => {
    redis.disconnect();
    await Promise.all([holderApp.close(), waiterApp.close()]);
    await proxy.stop();
  });

  it('lets the :queue and :timeouts keys expire once the only waiter is cut off mid-wait', async () => {
    const name = 'cut-off-waiter';
    const queue = new RedisKeySpace(keyPrefix).lock(name).queue;
    const timeouts = new RedisKeySpace(keyPrefix).lock(name).timeouts;
    const holder = await holderApp.get(LockService).acquire(name);
    const waiting = waiterApp
      .get(LockService)
      .acquire(name, { waitTimeout: 30_000 })
      .catch((e: unknown) => e);
    expect(await holdsWithin(async () => (await redis.llen(queue)) === 1, 5_000, { every: 50 })).toBe(true);

    // The waiter's process is cut off: it can neither refresh its place nor leave the queue.
    proxy.blackhole();
    for (const key of [queue, timeouts]) {
      const pttl = await redis.pttl(key);
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(FAIR_WAITER_LIVENESS_MS);
    }
    expect(await holdsWithin(async () => (await redis.exists(queue, timeouts)) === 0, FAIR_WAITER_LIVENESS_MS + 3_000, { every: 50 })).toBe(true);

    // The holder is unaffected; the waiter comes back, queues again and gets the lock on release.
    expect(holder.held).toBe(true);
    proxy.heal();
    await holder.release();
    const handle = await waiting;
    expect((handle as { held?: boolean }).held).toBe(true);
    await (handle as { release(): Promise<void> }).release();
  });
});
