import type { TestingModule } from '@nestjs/testing';
import { LockService } from '../../lib/index.js';
import { createLockApp } from '../support/test-app.js';

describe('LockService basics', () => {
  let app: TestingModule;
  let locks: LockService;

  beforeAll(async () => {
    app = await createLockApp();
    locks = app.get(LockService);
  });
  afterAll(() => app.close());

  it('acquires, reports, and releases a lock', async () => {
    const lock = await locks.acquire('a');
    expect(lock.held).toBe(true);
    expect(await locks.isLocked('a')).toBe(true);
    await lock.release();
    expect(lock.held).toBe(false);
    expect(await locks.isLocked('a')).toBe(false);
  });
});
