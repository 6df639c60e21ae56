import { JobRateLimitedError, LockLostError, RedisLockError, UnrecoverableJobError } from '../../../../lib/index.js';

describe('instanceof on the library’s error classes', () => {
  it('is true for an error of the class or a subclass, false for other values', () => {
    expect(new UnrecoverableJobError('no') instanceof UnrecoverableJobError).toBe(true);
    expect(new UnrecoverableJobError('no') instanceof RedisLockError).toBe(true);
    expect(new UnrecoverableJobError('no') instanceof JobRateLimitedError).toBe(false);
    expect(new Error('plain') instanceof RedisLockError).toBe(false);
    expect((null as unknown) instanceof LockLostError).toBe(false);
  });

  it('never throws, whatever the value: a revoked Proxy or a throwing getter is no instance', () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(() => proxy instanceof Object).toThrow(TypeError); // what a plain class check does
    expect(proxy instanceof JobRateLimitedError).toBe(false);
    const hostile = Object.create(null, {
      [Symbol.for('nestjs-redis-lock:error-classes')]: {
        get() {
          throw new Error('getter');
        },
      },
    }) as unknown;
    expect(hostile instanceof UnrecoverableJobError).toBe(false);
  });
});
