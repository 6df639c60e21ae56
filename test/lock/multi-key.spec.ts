import { LockService } from '../../lib/index.js';
import { useLockApp } from '../support/test-app.js';
import { sleep } from '../support/timing.js';

describe('multi-key locks', () => {
  const lockApp = useLockApp();
  let locks: LockService;
  beforeAll(() => (locks = lockApp.locks()));

  it('takes all keys and releases all of them', async () => {
    const lock = await locks.acquire(['acct:1', 'acct:2']);
    expect(lock.key).toBe('acct:1,acct:2');
    expect(lock.fencingToken.split(',')).toHaveLength(2);
    expect(await locks.isLocked('acct:1')).toBe(true);
    expect(await locks.isLocked('acct:2')).toBe(true);
    await lock.release();
    expect(await locks.isLocked('acct:1')).toBe(false);
    expect(await locks.isLocked('acct:2')).toBe(false);
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
