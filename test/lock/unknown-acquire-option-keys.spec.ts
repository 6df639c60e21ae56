import { InvalidOptionsError, type LockService } from '../../lib/index.js';
import { useLockApp } from '../support/test-app.js';

/** Unknown keys in per-call lock options are refused before anything is sent. */
describe('Unknown acquire option keys are refused, with did you mean', () => {
  const lockApp = useLockApp();
  const locks = (): LockService => lockApp.locks();
  const misspelt = { waittimeout: 0 } as never;

  it.each<[string, (locks: LockService) => Promise<unknown>]>([
    ['acquire', (l) => l.acquire('unknown-keys:a', misspelt)],
    ['tryAcquire', (l) => l.tryAcquire('unknown-keys:a', misspelt)],
    ['using', (l) => l.using('unknown-keys:a', () => 1, misspelt)],
    ['acquire of several keys', (l) => l.acquire(['unknown-keys:a', 'unknown-keys:b'], misspelt)],
    ['readWrite().read', (l) => l.readWrite('unknown-keys:rw').read(misspelt)],
    ['readWrite().write', (l) => l.readWrite('unknown-keys:rw').write(misspelt)],
    ['readWrite().tryRead', (l) => l.readWrite('unknown-keys:rw').tryRead(misspelt)],
    ['semaphore().acquire', (l) => l.semaphore('unknown-keys:s', 2).acquire(misspelt)],
    ['semaphore().tryAcquire', (l) => l.semaphore('unknown-keys:s', 2).tryAcquire(misspelt)],
  ])('%s(k, { waittimeout }) is refused and takes no lock', async (_label, call) => {
    const error = await call(locks()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as InvalidOptionsError).option).toBe('waittimeout');
    expect((error as Error).message).toContain('did you mean `waitTimeout`?');
    const probe = await locks().tryAcquire('unknown-keys:a');
    expect(probe).not.toBeNull();
    await probe!.release();
  });

  it('the same options object is refused on every call, not only the first', async () => {
    for (let i = 0; i < 2; i++) await expect(locks().acquire('unknown-keys:again', misspelt)).rejects.toThrow(InvalidOptionsError);
  });
});
