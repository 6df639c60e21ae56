import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { LockAcquireTimeoutError, LockService, runInTransaction, WithLock } from '../../lib/index.js';
import { createWithLockApp } from '../fixtures/with-lock-app.js';
import { sleep } from '../support/timing.js';

@Injectable()
class Ledger {
  runs = 0;

  @WithLock('ledger:<0>', { waitTimeout: 1_500 })
  async post(account: string): Promise<string> {
    this.runs++;
    return account;
  }

  @WithLock('ledger:<0>', { mode: 'write', waitTimeout: 1_500 })
  async rebalance(account: string): Promise<string> {
    this.runs++;
    return account;
  }
}

/**
 * A release inside a unit of work is deferred to its end; the same unit of work must still be able
 * to take the key again (it re-enters the hold it is keeping), while other owners keep waiting.
 */
describe('lock sections inside one unit of work', () => {
  let app: TestingModule;
  let other: TestingModule;
  let locks: LockService;
  let otherLocks: LockService;
  let ledger: Ledger;

  beforeAll(async () => {
    const created = await createWithLockApp([Ledger]);
    app = created.app;
    other = (await createWithLockApp([], { keyPrefix: created.keyPrefix })).app;
    locks = app.get(LockService);
    otherLocks = other.get(LockService);
    ledger = app.get(Ledger);
  });
  afterAll(() => Promise.all([app?.close(), other?.close()]));

  it('runs two sequential using() sections on one key without waiting for itself, and keeps the key until the end', async () => {
    const key = 'seq-using';
    const tokens: string[] = [];
    await runInTransaction(async () => {
      await locks.using(key, (lock) => void tokens.push(lock.fencingToken), { waitTimeout: 1_500 });
      await locks.using(key, (lock) => void tokens.push(lock.fencingToken), { waitTimeout: 1_500 });
      expect(await otherLocks.tryAcquire(key)).toBeNull();
    });
    expect(tokens).toHaveLength(2);
    expect(tokens[1]).toBe(tokens[0]);
    expect(await locks.isLocked(key)).toBe(false);
    const after = await otherLocks.tryAcquire(key);
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('runs two sequential @WithLock calls on one key, exclusive and write mode alike', async () => {
    const before = ledger.runs;
    await runInTransaction(async () => {
      await expect(ledger.post('a1')).resolves.toBe('a1');
      await expect(ledger.post('a1')).resolves.toBe('a1');
      await expect(ledger.rebalance('b1')).resolves.toBe('b1');
      await expect(ledger.rebalance('b1')).resolves.toBe('b1');
    });
    expect(ledger.runs - before).toBe(4);
    expect(await locks.isLocked('ledger:a1')).toBe(false);
    expect(await locks.isLocked('ledger:b1')).toBe(false);
  });

  it('re-takes a key after acquire/release by hand, as many times as the work needs', async () => {
    const key = 'seq-manual';
    await runInTransaction(async () => {
      for (let i = 0; i < 3; i++) {
        const lock = await locks.acquire(key, { waitTimeout: 1_500 });
        await lock.release();
      }
      expect(await locks.isLocked(key)).toBe(true);
    });
    expect(await locks.isLocked(key)).toBe(false);
  });

  it('lets two concurrent branches of one unit of work exclude each other as before', async () => {
    const key = 'branches';
    let inside = 0;
    let most = 0;
    await runInTransaction(async () => {
      await locks.using(key, () => undefined);
      const branch = () =>
        locks.using(
          key,
          async () => {
            most = Math.max(most, ++inside);
            await sleep(50);
            inside--;
          },
          { waitTimeout: 300 },
        );
      const results = await Promise.allSettled([branch(), branch()]);
      // One branch re-enters the kept hold; the other waits for it like any other owner would.
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const rejected = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(rejected?.reason).toBeInstanceOf(LockAcquireTimeoutError);
    });
    expect(most).toBe(1);
    expect(await locks.isLocked(key)).toBe(false);
  });

  it('releases the parts of a failed multi-key acquire at once, not at the end of the unit of work', async () => {
    const blocker = await otherLocks.acquire('multi:b');
    try {
      await runInTransaction(async () => {
        await expect(locks.acquire(['multi:a', 'multi:b'], { waitTimeout: 200 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
        // Still inside the unit of work: the part that was taken is free again.
        expect(await locks.isLocked('multi:a')).toBe(false);
        const a = await otherLocks.tryAcquire('multi:a');
        expect(a).not.toBeNull();
        await a!.release();
      });
    } finally {
      await blocker.release();
    }
  });

  it('releases the parts of a failed multi-key read/write section at once', async () => {
    @Injectable()
    class Accounts {
      @WithLock(['rw:<0>', 'rw:<1>'], { mode: 'write', waitTimeout: 200 })
      async move(from: string, to: string): Promise<string> {
        return `${from}->${to}`;
      }
    }
    const created = await createWithLockApp([Accounts]);
    const accounts = created.app.get(Accounts);
    const sameLocks = created.app.get(LockService);
    const blocker = await sameLocks.readWrite('rw:y').read();
    try {
      await runInTransaction(async () => {
        await expect(accounts.move('x', 'y')).rejects.toBeInstanceOf(LockAcquireTimeoutError);
        expect(await sameLocks.isLocked('rw:x')).toBe(false);
      });
    } finally {
      await blocker.release();
      await created.app.close();
    }
  });
});
