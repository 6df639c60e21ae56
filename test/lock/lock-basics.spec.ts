import { LockService } from '../../lib/index.js';
import { useLockApp } from '../support/test-app.js';

describe('LockService basics', () => {
  const lockApp = useLockApp();
  let locks: LockService;
  beforeAll(() => (locks = lockApp.locks()));

  it('acquires, reports, and releases a lock', async () => {
    const lock = await locks.acquire('a');
    expect(lock.held).toBe(true);
    expect(await locks.isLocked('a')).toBe(true);
    await lock.release();
    expect(lock.held).toBe(false);
    expect(await locks.isLocked('a')).toBe(false);
  });
});
