import { LockLostError, runInTransaction, type LockHandle, type LockService } from '../../lib/index.js';
import { useLockServicePair } from '../support/test-app.js';
import { watchEventLoopStalls } from '../support/event-loop-stalls.js';
import { sleep } from '../support/timing.js';

/**
 * A nested acquire re-enters the hold of its enclosing section. When that hold is gone (its lease
 * ran out, Redis restarted), the nested acquire must not take the lock afresh under the section's
 * owner with a new token: code that read under the outer token would then write under the newest
 * token, and no fence could catch the lost update. It fails with LockLostError instead.
 */
describe('a nested acquire inside a section whose hold was lost', () => {
  const pair = useLockServicePair('nested-lost');
  let locks: LockService;
  let other: LockService;
  beforeAll(() => {
    ({ a: locks, b: other } = pair.services());
  });

  const kinds: Array<{
    name: string;
    section: (key: string, fn: (outer: LockHandle) => Promise<void>) => Promise<void>;
    nested: (key: string) => Promise<LockHandle>;
  }> = [
    {
      name: 'plain',
      section: (key, fn) => locks.using(key, fn, { leaseTime: 300 }),
      nested: (key) => locks.acquire(key, { waitTimeout: 1_000 }),
    },
    {
      name: 'fair',
      section: (key, fn) => locks.using(key, fn, { leaseTime: 300, fair: true }),
      nested: (key) => locks.acquire(key, { waitTimeout: 1_000, fair: true }),
    },
    ...(['read', 'write'] as const).map((side) => ({
      name: side,
      section: async (key: string, fn: (outer: LockHandle) => Promise<void>) => {
        const outer = await locks.readWrite(key)[side]({ leaseTime: 300 });
        try {
          await locks.runInScope(outer, () => fn(outer));
        } finally {
          await outer.release();
        }
      },
      nested: (key: string) => locks.readWrite(key)[side]({ waitTimeout: 1_000 }),
    })),
  ];

  it.each(kinds)('$name: fails with LockLostError instead of taking the free lock afresh', async ({ section, nested }) => {
    const key = `free-${Math.random()}`;
    let error: unknown;
    await section(key, async (outer) => {
      await sleep(500); // the outer lease (300 ms) ran out: the lock is free in Redis
      expect(outer.held).toBe(false);
      error = await nested(key).then(
        (inner) => inner.release().then(() => 'acquired'),
        (e: unknown) => e,
      );
    });
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('not-owner');
    expect(await locks.isLocked(key)).toBe(false);
  });

  it('plain: fails at once instead of waiting for another holder and then taking the lock afresh', async () => {
    const key = `taken-${Math.random()}`;
    let error: unknown;
    let theirs: LockHandle | undefined;
    await locks.using(
      key,
      async () => {
        await sleep(500);
        theirs = (await other.tryAcquire(key))!;
        expect(theirs).not.toBeNull();
        // Its time less any stall of this process meanwhile (a loaded CI host).
        const stalls = watchEventLoopStalls();
        const started = Date.now();
        error = await locks.acquire(key, { waitTimeout: 2_000 }).then(
          () => 'acquired',
          (e: unknown) => e,
        );
        expect(stalls.runnableSince(started)).toBeLessThan(1_500);
        stalls.stop();
      },
      { leaseTime: 300 },
    );
    expect(error).toBeInstanceOf(LockLostError);
    expect(theirs!.held).toBe(true);
    await theirs!.release();
  });

  it('inside a transaction, a later section takes a fresh lock when the kept hold has lapsed', async () => {
    const key = `kept-${Math.random()}`;
    const tokens: string[] = [];
    await runInTransaction(async () => {
      await locks.using(key, (lock) => void tokens.push(lock.fencingToken), { leaseTime: 300 });
      await sleep(500); // the kept hold's fixed lease ran out before the transaction ended
      await locks.using(key, (lock) => void tokens.push(lock.fencingToken), { leaseTime: 5_000 });
    });
    expect(tokens).toHaveLength(2);
    expect(BigInt(tokens[1])).toBeGreaterThan(BigInt(tokens[0]));
    expect(await locks.isLocked(key)).toBe(false);
  });
});
