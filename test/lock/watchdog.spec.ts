import type { RedisConnection } from '../../lib/core/connection/redis-connection.js';
import { jest } from '@jest/globals';
import { LockLostError, LockService, RedisLockEvents } from '../../lib/index.js';
import { rawRedis, uniquePrefix, useLockApp } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

describe('watchdog', () => {
  const keyPrefix = uniquePrefix('wd');
  // A 1 s lease: renewed every 333 ms, so an event loop held up for a few hundred ms on a loaded
  // machine does not end a lease the watchdog is keeping (a stall past the lease would, by design).
  const lockApp = useLockApp({ keyPrefix, lock: { leaseTime: 1_000 } });
  let locks: LockService;
  beforeAll(() => (locks = lockApp.locks()));

  it('lets a lock with an explicit lease expire and aborts its signal', async () => {
    const lock = await locks.acquire('fixed', { leaseTime: 200 });
    const reason = await new Promise((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)));
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toBe('expired');
    expect(lock.held).toBe(false);
  });

  it('fires signal with LockLostError and emits lock.lost when the key is deleted from outside', async () => {
    const events = lockApp.app().get(RedisLockEvents);
    const lostEvent = new Promise<{ key: string }>((resolve) => events.once('lock.lost', resolve));
    const lock = await locks.acquire('victim');
    const redis = rawRedis();
    await redis.del(new RedisKeySpace(keyPrefix).lock('victim').owners);
    redis.disconnect();

    // The next renewal may already have found the key gone while DEL's reply travelled back.
    const reason = lock.signal.aborted
      ? lock.signal.reason
      : await new Promise((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)));
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).code).toBe('LOCK_LOST');
    expect((await lostEvent).key).toBe('victim');
    expect(lock.held).toBe(false);
    await lock.release(); // releasing a lost lock is quiet
  });

  it('renews many held locks with one batched script per tick', async () => {
    const held = await Promise.all(Array.from({ length: 20 }, (_, i) => locks.acquire(`batch:${i}`)));
    // Watch the script calls this module's connection makes (Redis itself still runs every one), whatever the driver.
    const connection = (locks as unknown as { connection: RedisConnection }).connection;
    const runScript = jest.spyOn(connection, 'runScript');
    try {
      await waitFor(() => runScript.mock.calls.length >= 3, 20_000, 'three renewal ticks');
      // Each call renews all 20 holds (one key per hold): one call per tick, not one per lock.
      for (const [, keys] of runScript.mock.calls) expect(keys).toHaveLength(20);
    } finally {
      runScript.mockRestore();
    }
    expect(held.every((h) => h.held)).toBe(true);
    await Promise.all(held.map((h) => h.release()));
  });
});

describe('watchdog renewal', () => {
  // Its own app with a 2 s lease (renewed every 667 ms): a CI run on a loaded 2-core machine stalled
  // this process long enough to cost a 1 s lease its renewal, and a lease that ran out is rightly lost.
  const lockApp = useLockApp({ keyPrefix: uniquePrefix('wdr'), lock: { leaseTime: 2_000 } });

  it('keeps a lock without explicit lease alive past three leases', async () => {
    const locks = lockApp.locks();
    const lock = await locks.acquire('alive');
    await sleep(6_500);
    expect(lock.held).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect(await locks.isLocked('alive')).toBe(true);
    await lock.release();
  });
});
