import { Test } from '@nestjs/testing';
import { InvalidOptionsError, LockService, RedisLockModule } from '../../lib/index.js';
import { resolveAcquireOptions } from '../../lib/lock/resolve-acquire-options.js';
import { resolveRedisLockConfig } from '../../lib/core/options/resolve-redis-lock-config.js';
import { testRedisUrl } from '../support/test-app.js';
import { expectInvalidOption } from '../support/expect-invalid-option.js';
import { thrownBy } from '../support/thrown.js';

/** `syncReplicas` is checked when the module starts and on every call, with the option named. */
describe('syncReplicas options', () => {
  const config = (syncReplicas: unknown, leaseTime?: number) =>
    resolveRedisLockConfig({ lock: { leaseTime, syncReplicas: syncReplicas as never } });

  it('is off by default and keeps a valid setting', () => {
    expect(config(undefined).lock.syncReplicas).toBeUndefined();
    expect(config({ replicas: 1, timeout: 100 }).lock.syncReplicas).toEqual({ replicas: 1, timeout: 100 });
  });

  it.each([
    [{ replicas: 0, timeout: 100 }, 'lock.syncReplicas.replicas'],
    [{ replicas: 1.5, timeout: 100 }, 'lock.syncReplicas.replicas'],
    [{ replicas: 1, timeout: 0 }, 'lock.syncReplicas.timeout'],
    [{ replicas: 1, timeout: 15_000 }, 'lock.syncReplicas.timeout'],
    [{ replicas: 1 }, 'lock.syncReplicas.timeout'],
    [true, 'lock.syncReplicas'],
    [[1, 100], 'lock.syncReplicas'],
  ])('rejects %j naming %s', (value, option) => {
    expectInvalidOption(
      thrownBy(() => config(value)),
      option,
    );
  });

  it('checks the timeout against the lease it will run under', () => {
    // Half of the default 30 s lease is fine for the module, not for a 1 s explicit lease.
    const lock = config({ replicas: 1, timeout: 800 }).lock;
    expect(resolveAcquireOptions({}, lock).syncReplicas).toEqual({ replicas: 1, timeout: 800 });
    expect(() => resolveAcquireOptions({ leaseTime: 1_000 }, lock)).toThrow(InvalidOptionsError);
    expect(resolveAcquireOptions({ leaseTime: 1_000, syncReplicas: false }, lock).syncReplicas).toBeUndefined();
    expect(resolveAcquireOptions({ syncReplicas: { replicas: 2, timeout: 50 } }, lock).syncReplicas).toEqual({ replicas: 2, timeout: 50 });
    expect(() => resolveAcquireOptions({ syncReplicas: { replicas: -1, timeout: 50 } }, lock)).toThrow(/syncReplicas\.replicas/);
  });

  it('stops the application at bootstrap, before any lock is taken', async () => {
    await expect(
      Test.createTestingModule({
        imports: [RedisLockModule.forRoot({ redis: testRedisUrl(), lock: { syncReplicas: { replicas: 1, timeout: 0 } } })],
      })
        .compile()
        .then((m) => m.get(LockService)),
    ).rejects.toThrow(/lock\.syncReplicas\.timeout/);
  });
});
