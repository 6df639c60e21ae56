import { InvalidOptionsError } from '../../../../lib/core/errors/invalid-options.error.js';
import { editDistance, refuseUnknownKeys, suggestOptionKey } from '../../../../lib/core/options/known-option-keys.js';
import { refuseAsInvalidOption } from '../../../../lib/core/options/option-validation.js';

describe('suggestOptionKey', () => {
  const known = ['keyPrefix', 'lock', 'delayQueue', 'connectTimeout', 'unreachableTimeout', 'tracing'];

  it('prefers a key that differs only in case', () => {
    expect(suggestOptionKey('keyprefix', known)).toBe('keyPrefix');
    expect(suggestOptionKey('KEYPREFIX', known)).toBe('keyPrefix');
    expect(suggestOptionKey('delayqueue', known)).toBe('delayQueue');
  });

  it('finds a close misspelling: a letter missing, extra, changed, or two swapped', () => {
    expect(suggestOptionKey('keyPrefx', known)).toBe('keyPrefix');
    expect(suggestOptionKey('keyPreffix', known)).toBe('keyPrefix');
    expect(suggestOptionKey('keyPrefox', known)).toBe('keyPrefix');
    expect(suggestOptionKey('keyPerfix', known)).toBe('keyPrefix');
    expect(suggestOptionKey('unreachableTimout', known)).toBe('unreachableTimeout');
    expect(suggestOptionKey('concurency', ['concurrency', 'maxAttempts'])).toBe('concurrency');
  });

  it('picks the closest of several candidates', () => {
    expect(suggestOptionKey('connectTimeot', known)).toBe('connectTimeout');
    expect(suggestOptionKey('delay', ['delay', 'factor', 'maxDelay', 'jitter'])).toBe('delay');
  });

  it('suggests nothing when no key is close (short keys allow one edit only)', () => {
    expect(suggestOptionKey('wibble', known)).toBeUndefined();
    expect(suggestOptionKey('lk', known)).toBeUndefined();
    expect(suggestOptionKey('redisUrl', ['redis', 'redlock'])).toBeUndefined();
  });

  it('measures optimal string alignment distance', () => {
    expect(editDistance('', '')).toBe(0);
    expect(editDistance('abc', 'abc')).toBe(0);
    expect(editDistance('abc', 'acb')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
  });
});

describe('refuseUnknownKeys', () => {
  it('refuses the first unknown key with its full path, a hint and the keys of its level', () => {
    let caught: unknown;
    try {
      refuseUnknownKeys(refuseAsInvalidOption, 'delayQueue', { concurrency: 1, concurency: 2 }, ['concurrency', 'maxAttempts']);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidOptionsError);
    expect((caught as InvalidOptionsError).option).toBe('delayQueue.concurency');
    expect((caught as Error).message).toBe(
      'Invalid option `delayQueue.concurency`: unknown option (did you mean `concurrency`?), which would be ignored; ' +
        'the options of `delayQueue` are: concurrency, maxAttempts.',
    );
  });

  it('names a top-level key without a dot', () => {
    expect(() => refuseUnknownKeys(refuseAsInvalidOption, '', { keyprefix: 'a' }, ['keyPrefix'])).toThrow(
      'Invalid option `keyprefix`: unknown option (did you mean `keyPrefix`?), which would be ignored; the options are: keyPrefix.',
    );
  });

  it('accepts known keys and leaves values that are not objects to the value checks', () => {
    expect(() => refuseUnknownKeys(refuseAsInvalidOption, 'lock', { fair: true }, ['fair'])).not.toThrow();
    for (const value of [undefined, null, 5, 'x', [1, 2]]) {
      expect(() => refuseUnknownKeys(refuseAsInvalidOption, 'lock', value, ['fair'])).not.toThrow();
    }
  });
});
