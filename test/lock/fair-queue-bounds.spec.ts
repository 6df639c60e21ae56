import type { TestingModule } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { LockService, RedisConnectionError } from '../../lib/index.js';
import { FAIR_WAITER_LIVENESS_MS } from '../../lib/lock/kinds/fair/fair.kind.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { createLockApp, rawRedis, testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { holdsWithin, waitFor, within } from '../support/timing.js';
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
    const keys = new RedisKeySpace(keyPrefix).lock(name);
    const holder = await holderApp.get(LockService).acquire(name);
    const waiting = waiterApp
      .get(LockService)
      .acquire(name, { waitTimeout: 30_000 })
      .catch((e: unknown) => e);
    // Queued and parked on its wake channel: from now on only its heartbeat tries talk to Redis.
    await waitFor(
      async () => (await redis.llen(keys.queue)) === 1 && ((await redis.pubsub('NUMSUB', keys.wakeChannel)) as [string, number])[1] === 1,
      5_000,
      'the waiter queued and subscribed',
    );

    // The waiter's process is cut off: it can neither refresh its place nor leave the queue.
    proxy.blackhole();
    for (const key of [keys.queue, keys.timeouts]) {
      const pttl = await redis.pttl(key);
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(FAIR_WAITER_LIVENESS_MS);
    }
    // Its next heartbeat try goes unanswered: the call settles as the operations contract says
    // (RedisConnectionError once Redis has been silent for unreachableTimeout), not at waitTimeout.
    expect(await within(waiting, 10_000, 'the cut-off waiter to give up')).toBeInstanceOf(RedisConnectionError);
    expect(
      await holdsWithin(async () => (await redis.exists(keys.queue, keys.timeouts)) === 0, FAIR_WAITER_LIVENESS_MS + 3_000, { every: 50 }),
    ).toBe(true);

    // The holder is unaffected; the waiter's instance, reachable again, queues again and gets the lock on release.
    expect(holder.held).toBe(true);
    proxy.heal();
    // Its connection is usable again once the held bytes got through and Redis answered.
    const waiterLocks = waiterApp.get(LockService);
    await waitFor(
      () =>
        waiterLocks.isLocked(name).then(
          () => true,
          () => false,
        ),
      10_000,
      'the waiter instance reaching Redis again',
    );
    const again = waiterLocks.acquire(name, { waitTimeout: 30_000 });
    await waitFor(async () => (await redis.llen(keys.queue)) === 1, 10_000, 'the waiter queued again');
    await holder.release();
    const handle = await again;
    expect(handle.held).toBe(true);
    await handle.release();
  });
});
