import { LockService, LockContext } from '../../lib/index.js';
import { useLockApp } from '../support/test-app.js';
import { sleep } from '../support/timing.js';

describe('reentrancy', () => {
  const lockApp = useLockApp();
  let locks: LockService;
  beforeAll(() => (locks = lockApp.locks()));

  it('re-enters a lock held by the enclosing locked section, keeping its fencing token', async () => {
    await locks.using('re', async (outer) => {
      const inner = await locks.tryAcquire('re');
      expect(inner).not.toBeNull();
      expect(inner!.fencingToken).toBe(outer.fencingToken);
      await locks.using('re', async (nested) => {
        expect(nested.fencingToken).toBe(outer.fencingToken);
        expect(LockContext.current()?.key).toBe('re');
      });
      await inner!.release();
      // Releasing the inner holds leaves the outer one in place.
      expect(await locks.isLocked('re')).toBe(true);
      expect(outer.held).toBe(true);
    });
    expect(await locks.isLocked('re')).toBe(false);
  });

  it('re-enters from deep inside the section, across awaits and timers', async () => {
    await locks.using('deep', async () => {
      await sleep(5);
      const again = await new Promise<Awaited<ReturnType<LockService['tryAcquire']>>>((resolve, reject) =>
        setImmediate(() => locks.tryAcquire('deep').then(resolve, reject)),
      );
      expect(again).not.toBeNull();
      await again!.release();
    });
  });

  it('does not let two concurrent call chains in one process share a lock', async () => {
    let inside = 0;
    let maxInside = 0;
    const section = () =>
      locks.using('chains', async () => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        await sleep(20);
        inside--;
      });
    await Promise.all([section(), section(), section()]);
    expect(maxInside).toBe(1);
  });

  it('does not re-enter between parallel branches of one chain that does not hold the lock', async () => {
    await locks.using('other', async () => {
      const first = await locks.tryAcquire('branch');
      expect(first).not.toBeNull();
      const [second] = await Promise.all([locks.tryAcquire('branch')]);
      expect(second).toBeNull();
      await first!.release();
    });
  });

  it('does not re-enter with a bare acquire outside a section (a fresh owner each time)', async () => {
    const first = await locks.acquire('bare');
    expect(await locks.tryAcquire('bare')).toBeNull();
    await first.release();
  });

  it('exposes no LockContext outside a locked section', () => {
    expect(LockContext.current()).toBeUndefined();
  });
});
