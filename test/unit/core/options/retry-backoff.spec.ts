import { jest } from '@jest/globals';
import type { BackoffOptions } from '../../../../lib/index.js';
import { MAX_TIMER_MS, OptionValidator } from '../../../../lib/core/options/option-validation.js';
import { backoffDelay, resolveBackoff } from '../../../../lib/core/options/retry-backoff.js';

describe('backoffDelay: the wait before the next delivery', () => {
  const noJitter: Required<BackoffOptions> = { delay: 1_000, factor: 2, maxDelay: 60_000, jitter: 0 };
  afterEach(() => jest.restoreAllMocks());

  it('starts at `delay` after the first failed attempt and multiplies by `factor` after each next one', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => backoffDelay(noJitter, attempt))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000]);
  });

  it('treats an attempt below 1 as the first', () => {
    expect(backoffDelay(noJitter, 0)).toBe(1_000);
    expect(backoffDelay(noJitter, -3)).toBe(1_000);
  });

  it('never waits longer than `maxDelay`, however many attempts failed', () => {
    expect(backoffDelay(noJitter, 7)).toBe(60_000);
    expect(backoffDelay(noJitter, 10_000)).toBe(60_000); // 2^9999 is Infinity: still capped
  });

  it('waits the same every time with factor 1', () => {
    const constant = { ...noJitter, factor: 1 };
    expect([1, 5, 50].map((attempt) => backoffDelay(constant, attempt))).toEqual([1_000, 1_000, 1_000]);
  });

  it('takes the jitter off the capped value: between (1 - jitter) and 1 times it', () => {
    const jittered = { ...noJitter, jitter: 0.25 };
    jest.spyOn(Math, 'random').mockReturnValue(0);
    expect(backoffDelay(jittered, 3)).toBe(4_000);
    expect(backoffDelay(jittered, 20)).toBe(60_000);
    jest.spyOn(Math, 'random').mockReturnValue(0.999_999);
    expect(backoffDelay(jittered, 3)).toBe(3_000);
    expect(backoffDelay(jittered, 20)).toBe(45_000);
    jest.spyOn(Math, 'random').mockReturnValue(0.5);
    expect(backoffDelay(jittered, 3)).toBe(3_500);
  });

  it('stays inside the jitter band for any random value', () => {
    const jittered = { delay: 200, factor: 3, maxDelay: 10_000, jitter: 0.5 };
    for (let attempt = 1; attempt <= 8; attempt++) {
      const capped = Math.min(10_000, 200 * 3 ** (attempt - 1));
      for (let i = 0; i < 50; i++) {
        const wait = backoffDelay(jittered, attempt);
        expect(wait).toBeGreaterThanOrEqual(Math.floor(capped * 0.5));
        expect(wait).toBeLessThanOrEqual(capped);
      }
    }
  });

  it('can go down to no wait at all with jitter 1, and rounds to whole milliseconds', () => {
    jest.spyOn(Math, 'random').mockReturnValue(0.999_999_9);
    expect(backoffDelay({ ...noJitter, jitter: 1 }, 1)).toBe(0);
    jest.spyOn(Math, 'random').mockReturnValue(0.333);
    expect(Number.isInteger(backoffDelay({ delay: 7, factor: 1.5, maxDelay: 1_000, jitter: 0.3 }, 2))).toBe(true);
  });
});

describe("resolveBackoff: a job's own backoff over the module's", () => {
  const base: Required<BackoffOptions> = { delay: 1_000, factor: 2, maxDelay: 3_600_000, jitter: 0.2 };
  const validate = new OptionValidator((option: string, problem: string): never => {
    throw new Error(`${option}: ${problem}`);
  });
  const resolve = (value: unknown) => resolveBackoff(validate, 'backoff', value, base);

  it('takes each field that is given and the base for the rest', () => {
    expect(resolve({ delay: 50 })).toEqual({ delay: 50, factor: 2, maxDelay: 3_600_000, jitter: 0.2 });
    expect(resolve({ factor: 1, jitter: 0 })).toEqual({ delay: 1_000, factor: 1, maxDelay: 3_600_000, jitter: 0 });
    expect(resolve({})).toEqual(base);
  });

  it('rounds millisecond fields down', () => {
    expect(resolve({ delay: 10.9, maxDelay: 99.5 })).toMatchObject({ delay: 10, maxDelay: 99 });
  });

  it.each<[string, unknown, string]>([
    ['a negative delay', { delay: -1 }, 'backoff.delay'],
    ['a delay past the timer limit', { delay: MAX_TIMER_MS + 1 }, 'backoff.delay'],
    ['a string maxDelay', { maxDelay: '5' }, 'backoff.maxDelay'],
    ['a factor below 1', { factor: 0.9 }, 'backoff.factor'],
    ['a NaN factor', { factor: Number.NaN }, 'backoff.factor'],
    ['a jitter below 0', { jitter: -0.1 }, 'backoff.jitter'],
    ['a jitter above 1', { jitter: 2 }, 'backoff.jitter'],
    ['a backoff that is not an object', 5, 'backoff'],
  ])('refuses %s through the validator, naming the field', (_label, value, field) => {
    expect(() => resolve(value)).toThrow(new RegExp(`^${field}: `));
  });
});
