import { InvalidOptionsError, type AcquireOptions } from '../../../lib/index.js';
import { MAX_TIMER_MS } from '../../../lib/core/options/option-validation.js';
import { MAX_LEASE_MS } from '../../../lib/core/options/option-bounds.js';
import { resolveRedisLockConfig } from '../../../lib/core/options/resolve-redis-lock-config.js';
import { resolveAcquireOptions } from '../../../lib/lock/resolve-acquire-options.js';
import { refusedWith } from '../../support/thrown.js';

const defaults = resolveRedisLockConfig({}).lock;
const replicated = resolveRedisLockConfig({ lock: { leaseTime: 1_000, syncReplicas: { replicas: 1, timeout: 400 } } }).lock;

function refusal(options: unknown, lock = defaults): InvalidOptionsError {
  return refusedWith(InvalidOptionsError, () => resolveAcquireOptions(options as AcquireOptions, lock), options);
}

describe('resolveAcquireOptions: per-call options over the module defaults', () => {
  it('takes every default when nothing is given, with the watchdog on', () => {
    expect(resolveAcquireOptions(undefined, defaults)).toEqual({
      waitTimeout: 10_000,
      leaseTime: 30_000,
      watchdog: true,
      signal: undefined,
      fair: false,
      keyPattern: undefined,
      syncReplicas: undefined,
    });
    expect(resolveAcquireOptions({}, defaults)).toEqual(resolveAcquireOptions(undefined, defaults));
  });

  it('keeps given values, rounding durations down to whole ms', () => {
    const signal = new AbortController().signal;
    expect(resolveAcquireOptions({ waitTimeout: 0.9, fair: true, signal, keyPattern: 'order:<id>' }, defaults)).toMatchObject({
      waitTimeout: 0,
      fair: true,
      signal,
      keyPattern: 'order:<id>',
    });
  });

  it('turns the watchdog off for an explicit lease, and never on when the module turned it off', () => {
    expect(resolveAcquireOptions({ leaseTime: 5_000 }, defaults)).toMatchObject({ leaseTime: 5_000, watchdog: false });
    const noWatchdog = resolveRedisLockConfig({ lock: { watchdog: false } }).lock;
    expect(resolveAcquireOptions(undefined, noWatchdog).watchdog).toBe(false);
  });

  it('accepts the bounds of the module-wide ranges', () => {
    expect(resolveAcquireOptions({ leaseTime: 10, waitTimeout: MAX_TIMER_MS }, defaults)).toMatchObject({
      leaseTime: 10,
      waitTimeout: MAX_TIMER_MS,
    });
  });

  describe('syncReplicas', () => {
    it("inherits the module's setting, and `false` skips it for one call", () => {
      expect(resolveAcquireOptions(undefined, replicated).syncReplicas).toEqual({ replicas: 1, timeout: 400 });
      expect(resolveAcquireOptions({ syncReplicas: false }, replicated).syncReplicas).toBeUndefined();
    });

    it("takes a call's own setting, checked against the call's lease", () => {
      expect(resolveAcquireOptions({ syncReplicas: { replicas: 2, timeout: 50 } }, defaults).syncReplicas).toEqual({
        replicas: 2,
        timeout: 50,
      });
      expect(refusal({ leaseTime: 200, syncReplicas: { replicas: 1, timeout: 100 } }).option).toBe('syncReplicas.timeout');
    });

    it("checks the module's setting against a shorter lease given for one call", () => {
      expect(resolveAcquireOptions({ leaseTime: 802 }, replicated).syncReplicas).toEqual({ replicas: 1, timeout: 400 });
      expect(refusal({ leaseTime: 801 }, replicated).option).toBe('syncReplicas.timeout');
    });
  });

  it.each<[string, unknown, string]>([
    ['options that are not an object', 'fast', 'acquire options'],
    ['a signal that is not an AbortSignal', { signal: { aborted: false } }, 'signal'],
    ['fair as a string', { fair: 'yes' }, 'fair'],
    ['fair: null', { fair: null }, 'fair'],
    ['a keyPattern that is not a string', { keyPattern: 42 }, 'keyPattern'],
    ['a keyPattern over 200 characters', { keyPattern: 'k'.repeat(201) }, 'keyPattern'],
    ['a lease below 10 ms', { leaseTime: 9 }, 'leaseTime'],
    ['a lease past a year', { leaseTime: MAX_LEASE_MS + 1 }, 'leaseTime'],
    ['a negative waitTimeout', { waitTimeout: -1 }, 'waitTimeout'],
    ['a waitTimeout given as a string', { waitTimeout: '100' }, 'waitTimeout'],
    ['syncReplicas that is not an object', { syncReplicas: true }, 'syncReplicas'],
    ['syncReplicas with a fractional replica count', { syncReplicas: { replicas: 1.5, timeout: 10 } }, 'syncReplicas.replicas'],
  ])('refuses %s, naming the option', (_label, options, option) => {
    expect(refusal(options).option).toBe(option);
  });

  it('says what was given and what to use', () => {
    expect(refusal({ waitTimeout: '100' }).message).toBe(
      `Invalid option \`waitTimeout\`: got the string "100"; use a number of milliseconds from 0 to ${MAX_TIMER_MS}.`,
    );
  });
});
