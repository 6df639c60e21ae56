import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import {
  InvalidLockKeyError,
  InvalidOptionsError,
  LeaderElection,
  LeaderElections,
  LockService,
  OnOneInstance,
  runInTransaction,
  type LeadershipHooks,
  type LockHandle,
} from '../../lib/index.js';
import { createLockApp, uniquePrefix, useLockApp, useRawRedis } from '../support/test-app.js';
import { closeSchedulingApps, createSchedulingApp } from '../scheduling/support/scheduling-app.js';

/**
 * The lock contract a user (or a lock-store contract suite run through a thin adapter) holds us to,
 * through the public API on a real Redis: leases of weeks, keys of any Unicode up to 500 characters
 * (and the documented bound of 1,024 characters), and `release()` saying whether it ended a live hold.
 */

/** setTimeout's upper bound: a longer delay fires after 1 ms (Node's TimeoutOverflowWarning). */
const MAX_TIMER_MS = 2 ** 31 - 1;
const DAY = 86_400_000;
const THIRTY_DAYS = 30 * DAY; // 2,592,000,000 ms
const NINETY_DAYS = 90 * DAY;

/**
 * Records every timer the code under test asks for with a delay past setTimeout's bound (which Node
 * would fire after 1 ms), while `run` runs and its promises settle.
 */
async function overflowingTimers<T>(run: () => Promise<T>): Promise<{ result: T; overflows: number[] }> {
  const overflows: number[] = [];
  const realTimeout = globalThis.setTimeout;
  const realInterval = globalThis.setInterval;
  const watch = <F extends (...args: never[]) => unknown>(real: F): F =>
    ((handler: unknown, delay?: number, ...rest: unknown[]) => {
      if (typeof delay === 'number' && delay > MAX_TIMER_MS) overflows.push(delay);
      return (real as unknown as (...a: unknown[]) => unknown)(handler, delay, ...rest);
    }) as unknown as F;
  globalThis.setTimeout = watch(realTimeout);
  globalThis.setInterval = watch(realInterval);
  try {
    return { result: await run(), overflows };
  } finally {
    globalThis.setTimeout = realTimeout;
    globalThis.setInterval = realInterval;
  }
}

describe('the lock contract', () => {
  const keyPrefix = uniquePrefix('contract');
  const locks = useLockApp({ keyPrefix }).get(LockService);
  const redis = useRawRedis();

  describe('leases of weeks, past a 32-bit timer', () => {
    it(`takes a lock with a 30-day lease (${THIRTY_DAYS} ms): held, kept in Redis for 30 days, no timer overflowing`, async () => {
      const { result: lock, overflows } = await overflowingTimers(async () => {
        const lock = await locks.acquire('weeks:lock', { leaseTime: THIRTY_DAYS });
        // A round trip and a timer turn: a lease deadline armed past the bound would have fired by now.
        await locks.isLocked('weeks:lock');
        await new Promise((resolve) => setImmediate(resolve));
        return lock;
      });
      expect(overflows).toEqual([]);
      expect(lock.held).toBe(true);
      expect(lock.signal.aborted).toBe(false);
      const pttl = await redis.pttl(`${keyPrefix}:lock:{weeks:lock}`);
      expect(pttl).toBeGreaterThan(THIRTY_DAYS - 60_000);
      expect(pttl).toBeLessThanOrEqual(THIRTY_DAYS);
      await lock.extend(NINETY_DAYS);
      expect(await redis.pttl(`${keyPrefix}:lock:{weeks:lock}`)).toBeGreaterThan(NINETY_DAYS - 60_000);
      expect(lock.held).toBe(true);
      expect(await lock.release()).toBe(true);
    });

    it('takes a semaphore permit, a read and a write hold with a 30-day lease', async () => {
      const { result, overflows } = await overflowingTimers(async () => {
        const permit = await locks.semaphore('weeks:sem', 2).acquire({ leaseTime: THIRTY_DAYS });
        const read = await locks.readWrite('weeks:rw').read({ leaseTime: THIRTY_DAYS });
        await new Promise((resolve) => setImmediate(resolve));
        return { permit, read };
      });
      expect(overflows).toEqual([]);
      expect(result.permit.held).toBe(true);
      expect(result.read.held).toBe(true);
      expect(await result.permit.release()).toBe(true);
      expect(await result.read.release()).toBe(true);
      const write = await locks.readWrite('weeks:rw').write({ leaseTime: THIRTY_DAYS });
      expect(write.held).toBe(true);
      expect(await write.release()).toBe(true);
    });

    it('renews a watched lock whose module-wide lease is 90 days without a timer past the bound', async () => {
      const longApp = await createLockApp({ keyPrefix: uniquePrefix('contract-90d'), lock: { leaseTime: NINETY_DAYS } });
      try {
        const { result: lock, overflows } = await overflowingTimers(async () => {
          const lock = await longApp.get(LockService).acquire('weeks:watched');
          await new Promise((resolve) => setImmediate(resolve));
          return lock;
        });
        expect(overflows).toEqual([]);
        expect(lock.held).toBe(true);
        expect(await lock.release()).toBe(true);
      } finally {
        await longApp.close();
      }
    });

    it('still refuses a lease past a year, and one under 10 ms, naming the range', async () => {
      await expect(locks.acquire('weeks:refused', { leaseTime: 366 * DAY })).rejects.toThrow(InvalidOptionsError);
      await expect(locks.acquire('weeks:refused', { leaseTime: 5 })).rejects.toThrow(/from 10 to 31536000000/);
    });
  });

  describe('keys of any Unicode', () => {
    const names = [
      ['500 emoji (2,000 UTF-8 bytes)', '🔒'.repeat(500)],
      ['500 CJK characters (1,500 bytes)', '鍵'.repeat(500)],
      ['500 mixed characters with braces and percent signs', 'ä{}%🚀'.repeat(100)],
      ['1,024 four-byte characters, the bound', '𝄞'.repeat(1024)],
    ] as const;

    it.each(names)('locks, reports and releases a key of %s', async (_what, name) => {
      const lock = await locks.acquire(name, { leaseTime: 10_000 });
      expect(lock.key).toBe(name);
      expect(await locks.isLocked(name)).toBe(true);
      expect(await locks.tryAcquire(name)).toBeNull();
      expect(await lock.release()).toBe(true);
      expect(await locks.isLocked(name)).toBe(false);
      const permit = await locks.semaphore(name, 1).acquire({ leaseTime: 10_000 });
      expect(await permit.release()).toBe(true);
    });

    it('tells two 500-character keys apart that differ in their last character', async () => {
      const a = await locks.acquire(`${'é'.repeat(499)}a`);
      const b = await locks.tryAcquire(`${'é'.repeat(499)}b`);
      expect(b?.held).toBe(true);
      await Promise.all([a.release(), b?.release()]);
    });

    it('refuses a key of 1,025 characters, in characters, whatever their bytes', async () => {
      await expect(locks.acquire('a'.repeat(1025))).rejects.toThrow(InvalidLockKeyError);
      await expect(locks.acquire('a'.repeat(1025))).rejects.toThrow(/at most 1024 characters/);
    });
  });

  describe('release() says whether it ended a live hold', () => {
    it('true for the release of a held lock, false for a second release', async () => {
      const lock = await locks.acquire('release:twice');
      expect(await lock.release()).toBe(true);
      expect(await lock.release()).toBe(false);
    });

    it('true for each level of a re-entered lock', async () => {
      await locks.using('release:nested', async () => {
        const inner = await locks.acquire('release:nested');
        expect(await inner.release()).toBe(true);
        expect(await locks.isLocked('release:nested')).toBe(true);
      });
      expect(await locks.isLocked('release:nested')).toBe(false);
    });

    it('false once the lease ran out (and another holder may have the lock)', async () => {
      const lock = await locks.acquire('release:expired', { leaseTime: 50 });
      await new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
      const next = await locks.acquire('release:expired', { leaseTime: 10_000 });
      expect(await lock.release()).toBe(false);
      expect(next.held).toBe(true);
      expect(await next.release()).toBe(true);
    });

    it('false when Redis no longer lists the hold (deleted under it)', async () => {
      const lock = await locks.acquire('release:deleted', { leaseTime: 10_000 });
      await redis.del(`${keyPrefix}:lock:{release:deleted}`);
      expect(await lock.release()).toBe(false);
    });

    it('true for a multi-key lock released whole, false for the second time', async () => {
      const lock = await locks.acquire(['release:m1', 'release:m2']);
      expect(await lock.release()).toBe(true);
      expect(await lock.release()).toBe(false);
    });

    it('true inside a transaction, where the release waits for the commit', async () => {
      let released: boolean | undefined;
      await runInTransaction(async () => {
        const lock = await locks.acquire('release:tx');
        released = await lock.release();
        expect(await locks.isLocked('release:tx')).toBe(true);
      });
      expect(released).toBe(true);
      expect(await locks.isLocked('release:tx')).toBe(false);
    });

    it('true for a semaphore permit and a read hold, false after', async () => {
      const permit = await locks.semaphore('release:sem', 1).acquire();
      expect(await permit.release()).toBe(true);
      expect(await permit.release()).toBe(false);
      const read = await locks.readWrite('release:rw').read();
      expect(await read.release()).toBe(true);
      expect(await read.release()).toBe(false);
    });
  });
});

describe('the lock contract of scheduled work: 30-day leases', () => {
  const apps: TestingModule[] = [];
  afterAll(() => closeSchedulingApps(apps));

  it('elects a leader and runs an @OnOneInstance method on leases of 30 and 90 days, no timer past the bound', async () => {
    // Declared here: a ttl the decorators refuse throws when the class is defined.
    @Injectable()
    @LeaderElection('contract.leader', { ttl: THIRTY_DAYS })
    class MonthlyLeader implements LeadershipHooks {
      lock?: LockHandle;
      onLeadershipAcquired(lock: LockHandle): void {
        this.lock = lock;
      }
    }

    @Injectable()
    class MonthlyReport {
      runs = 0;
      @OnOneInstance({ key: 'contract.monthly', ttl: NINETY_DAYS })
      run(): number {
        return ++this.runs;
      }
    }

    const { result: app, overflows } = await overflowingTimers(async () => {
      const app = await createSchedulingApp(uniquePrefix('contract-sched'), [MonthlyLeader, MonthlyReport]);
      apps.push(app);
      expect(await app.get(MonthlyReport).run()).toBe(1);
      await new Promise((resolve) => setImmediate(resolve));
      return app;
    });
    expect(overflows).toEqual([]);
    expect(app.get(MonthlyLeader).lock?.held).toBe(true);
    expect(app.get(LeaderElections).status()[0]).toMatchObject({ leader: true, ttl: THIRTY_DAYS });
    expect(await app.get(MonthlyReport).run()).toBe(2);
  });
});
