import { InvalidOptionsError } from '../../../lib/index.js';
import { keyPatternOf, resolveWithLockOptions, type WithLockOptions } from '../../../lib/decorators/with-lock-options.js';

const location = '@WithLock on Spec.method()';

describe('resolveWithLockOptions', () => {
  it('defaults to an exclusive lock that throws when taken, with the module defaults for the rest', () => {
    expect(resolveWithLockOptions(undefined, location)).toEqual({
      acquire: {},
      mode: 'exclusive',
      onLocked: 'throw',
      location,
    });
  });

  it('passes the lock options on as acquire options, with the key pattern', () => {
    const onLocked = () => 'fallback';
    const resolved = resolveWithLockOptions({ waitTimeout: 0, leaseTime: 500, fair: true, onLocked }, location, 'order:<0>');
    expect(resolved.acquire).toEqual({ waitTimeout: 0, leaseTime: 500, fair: true, keyPattern: 'order:<0>' });
    expect(resolved.onLocked).toBe(onLocked);
  });

  it.each<[unknown, string, string]>([
    [{ waitTimeout: -1 }, 'waitTimeout', 'from 0 to'],
    [{ waitTimeout: Number.NaN }, 'waitTimeout', 'got NaN'],
    [{ leaseTime: 5 }, 'leaseTime', 'from 10 to'],
    [{ leaseTime: 'long' }, 'leaseTime', 'got the string "long"'],
    [{ fair: 'yes' }, 'fair', 'use true or false'],
    [{ mode: 'shared' }, 'mode', "use 'exclusive', 'read' or 'write'"],
    [{ mode: 'read', fair: true }, 'fair', 'fair hand-off applies to exclusive locks'],
    [{ onLocked: 'ignore' }, 'onLocked', "use 'throw', 'skip' or a function"],
    [{ timeout: 5 }, 'timeout', 'unknown option'],
    [{ waittimeout: 5 }, 'waittimeout', 'unknown option (did you mean `waitTimeout`?)'],
    [{ leasTime: 500 }, 'leasTime', 'unknown option (did you mean `leaseTime`?)'],
  ])('refuses %j, naming the option and where the decorator sits', (options, option, problem) => {
    let error: unknown;
    try {
      resolveWithLockOptions(options as WithLockOptions, location);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as Error).message).toContain(option);
    expect((error as Error).message).toContain(problem);
    expect((error as Error).message).toContain(`(in ${location})`);
  });
});

describe('keyPatternOf: the low-cardinality name of a section', () => {
  it('is the template, the templates joined, or the method for a key function', () => {
    expect(keyPatternOf('order:<0>', 'Spec.method()')).toBe('order:<0>');
    expect(keyPatternOf(['acct:<0>', 'acct:<1>'], 'Spec.method()')).toBe('acct:<0> + acct:<1>');
    expect(keyPatternOf(() => 'k', 'Spec.method()')).toBe('Spec.method()');
  });
});
