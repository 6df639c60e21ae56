import { LockContext, LockService } from '../../lib/index.js';
import { useLockApp } from '../support/test-app.js';
import { sleep } from '../support/timing.js';

describe('multi-key locks', () => {
  const lockApp = useLockApp();
  let locks: LockService;
  beforeAll(() => (locks = lockApp.locks()));

  it('takes all keys and releases all of them', async () => {
    const lock = await locks.acquire(['acct:1', 'acct:2']);
    expect(lock.key).toBe('acct:1,acct:2');
    expect(Object.keys(lock.fencingTokens)).toEqual(['acct:1', 'acct:2']);
    expect(lock.fencingToken).toMatch(/^\d+$/);
    expect(await locks.isLocked('acct:1')).toBe(true);
    expect(await locks.isLocked('acct:2')).toBe(true);
    await lock.release();
    expect(await locks.isLocked('acct:1')).toBe(false);
    expect(await locks.isLocked('acct:2')).toBe(false);
  });

  it('gives a fencing token per key, and a fencingToken that fits a bigint column (the greatest of them)', async () => {
    const single = await locks.acquire('acct:9');
    const tokenOf9 = single.fencingToken;
    expect(single.fencingTokens).toEqual({ 'acct:9': tokenOf9 });
    await single.release();

    const lock = await locks.acquire(['acct:9', 'acct:8']);
    const tokens = lock.fencingTokens;
    expect(Object.keys(tokens).sort()).toEqual(['acct:8', 'acct:9']);
    for (const token of Object.values(tokens)) expect(token).toMatch(/^\d+$/);
    expect(BigInt(tokens['acct:9'])).toBeGreaterThan(BigInt(tokenOf9));
    expect(lock.fencingToken).toMatch(/^\d+$/);
    expect(BigInt(lock.fencingToken)).toBeLessThanOrEqual(2n ** 63n - 1n);
    expect(BigInt(lock.fencingToken)).toBe([tokens['acct:8'], tokens['acct:9']].map(BigInt).reduce((a, b) => (a > b ? a : b)));
    await lock.release();

    await locks.using(['acct:7', 'acct:6'], (held) => {
      const context = LockContext.current()!;
      expect(context.fencingTokens).toEqual(held.fencingTokens);
      expect(context.fencingToken).toBe(held.fencingToken);
    });
  });

  it('is all or nothing: tryAcquire takes none when one key is busy', async () => {
    const busy = await locks.acquire('b');
    expect(await locks.tryAcquire(['a', 'b', 'c'])).toBeNull();
    expect(await locks.isLocked('a')).toBe(false);
    expect(await locks.isLocked('c')).toBe(false);
    await busy.release();
  });

  it('never deadlocks between [a, b] and [b, a]', async () => {
    let overlaps = 0;
    let inside = 0;
    const run = (keys: string[]) =>
      locks.using(
        keys,
        async () => {
          inside++;
          if (inside > 1) overlaps++;
          await sleep(2);
          inside--;
        },
        { waitTimeout: 20_000 },
      );
    await Promise.all(Array.from({ length: 20 }, (_, i) => run(i % 2 ? ['x', 'y'] : ['y', 'x'])));
    expect(overlaps).toBe(0);
  });
});
