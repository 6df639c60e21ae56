import { InvalidOptionsError } from '../../../../lib/index.js';
import { MAX_TIMER_MS, OptionValidator, describeValue, optionValidator } from '../../../../lib/core/options/option-validation.js';

/** A validator whose refusals are plain errors reading `option: problem`. */
const plain = (verb: 'got' | 'is' = 'got') =>
  new OptionValidator((option: string, problem: string): never => {
    throw new Error(`${option}: ${problem}`);
  }, verb);

describe('describeValue: a refused value as a message shows it', () => {
  it.each<[string, unknown, string]>([
    ['a number', -1, '-1'],
    ['NaN', Number.NaN, 'NaN'],
    ['Infinity', -Infinity, '-Infinity'],
    ['a boolean', true, 'true'],
    ['undefined', undefined, 'undefined'],
    ['null', null, 'null'],
    ['a short string', '30s', 'the string "30s"'],
    ['a long string, cut at 40 characters', 'x'.repeat(41), `the string "${'x'.repeat(40)}…"`],
    ['a BigInt', 5n, 'the BigInt 5n'],
    ['an invalid Date', new Date('nope'), 'an invalid Date'],
    ['a valid Date', new Date(Date.UTC(1969, 11, 31)), 'the Date 1969-12-31T00:00:00.000Z'],
    ['an array', [1], 'an array'],
    ['an object', { a: 1 }, 'an object'],
    ['a function', () => 1, 'a function'],
    ['a symbol', Symbol('s'), 'a symbol'],
  ])('%s', (_label, value, shown) => {
    expect(describeValue(value)).toBe(shown);
  });
});

describe('OptionValidator: the checks every option resolver shares', () => {
  const v = plain();

  describe('duration', () => {
    it('returns the default for an absent value, and rounds a given one down to whole ms', () => {
      expect(v.duration('t', undefined, { min: 0, default: 7 })).toBe(7);
      expect(v.duration('t', 12.9, { min: 0, default: 7 })).toBe(12);
    });

    it('accepts both ends of its range', () => {
      expect(v.duration('t', 10, { min: 10 })).toBe(10);
      expect(v.duration('t', MAX_TIMER_MS, { min: 10 })).toBe(MAX_TIMER_MS);
    });

    it.each<[string, unknown]>([
      ['below the minimum', 9],
      ['past the timer limit', MAX_TIMER_MS + 1],
      ['NaN', Number.NaN],
      ['Infinity', Infinity],
      ['a numeric string', '100'],
      ['null', null],
      ['absent without a default', undefined],
    ])('refuses a value %s, with the range to use', (_label, value) => {
      expect(() => v.duration('t', value, { min: 10 })).toThrow(
        `t: got ${describeValue(value)}; use a number of milliseconds from 10 to ${MAX_TIMER_MS}`,
      );
    });
  });

  describe('wholeNumber', () => {
    it('returns the default for an absent value and a whole number in range as given', () => {
      expect(v.wholeNumber('n', undefined, { min: 1, max: 3, default: 2 })).toBe(2);
      expect(v.wholeNumber('n', 1, { min: 1, max: 3 })).toBe(1);
      expect(v.wholeNumber('n', 3, { min: 1, max: 3 })).toBe(3);
    });

    it.each<[string, unknown]>([
      ['below the range', 0],
      ['above the range', 4],
      ['fractional', 1.5],
      ['NaN', Number.NaN],
      ['a string', '2'],
      ['null', null],
    ])('refuses a value %s', (_label, value) => {
      expect(() => v.wholeNumber('n', value, { min: 1, max: 3, default: 2 })).toThrow(
        `n: got ${describeValue(value)}; use a whole number from 1 to 3`,
      );
    });

    it('says what to use in the words it is given', () => {
      expect(() => v.wholeNumber('n', 0, { min: 1, max: 3, use: 'use 1, 2 or 3 replicas' })).toThrow('n: got 0; use 1, 2 or 3 replicas');
    });
  });

  describe('number', () => {
    const fraction = { accepts: (n: number) => n >= 0 && n <= 1, use: 'use a number from 0 to 1' };

    it('returns what its predicate accepts, or the default when absent', () => {
      expect(v.number('j', 0.5, fraction)).toBe(0.5);
      expect(v.number('j', undefined, { ...fraction, default: 0.2 })).toBe(0.2);
    });

    it.each<[unknown]>([[1.5], [Number.NaN], ['0.5'], [null]])('refuses %p', (value) => {
      expect(() => v.number('j', value, fraction)).toThrow(`j: got ${describeValue(value)}; use a number from 0 to 1`);
    });
  });

  describe('flag', () => {
    it('returns a boolean as given, or the default when absent', () => {
      expect(v.flag('f', false, { default: true })).toBe(false);
      expect(v.flag('f', undefined, { default: true })).toBe(true);
    });

    it.each<[unknown]>([['yes'], [1], [null], [undefined]])('refuses %p (absent too when there is no default)', (value) => {
      expect(() => v.flag('f', value)).toThrow(`f: got ${describeValue(value)}; use true or false`);
    });
  });

  describe('oneOf', () => {
    const allowed = ['error', 'warn', 'off'] as const;

    it('returns an allowed value, or the default when absent', () => {
      expect(v.oneOf('p', 'warn', allowed, { default: 'error' })).toBe('warn');
      expect(v.oneOf('p', undefined, allowed, { default: 'error' })).toBe('error');
    });

    it('refuses anything else, listing what is allowed', () => {
      expect(() => v.oneOf('p', 'ignore', allowed)).toThrow(`p: got the string "ignore"; use 'error', 'warn', 'off'`);
    });
  });

  it('introduces the value with the verb of its error: "got" for options, "is" for job fields', () => {
    expect(() => plain('is').duration('delay', -5, { min: 0 })).toThrow(
      `delay: is -5; use a number of milliseconds from 0 to ${MAX_TIMER_MS}`,
    );
  });

  it('refuses with InvalidOptionsError naming the option by default', () => {
    let error: unknown;
    try {
      optionValidator.flag('lock.fair', 'yes');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect(error).toMatchObject({ code: 'INVALID_OPTIONS', option: 'lock.fair' });
    expect((error as Error).message).toBe('Invalid option `lock.fair`: got the string "yes"; use true or false.');
  });
});
