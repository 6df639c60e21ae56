import { InvalidOptionsError } from '../errors/invalid-options.error.js';

import { MAX_TIMER_MS } from '../time/timer-delay.js';

export { MAX_TIMER_MS };

/**
 * Throws the error its resolver reports with. `option` is the path of the refused value
 * (`lock.leaseTime`, `backoff.jitter`); `problem` completes the error's sentence.
 */
export type RefuseOption = (option: string, problem: string) => never;

/** Refuses with `InvalidOptionsError` naming the option. */
export const refuseAsInvalidOption: RefuseOption = (option, problem) => {
  throw new InvalidOptionsError(option, problem);
};

/** A rule's `default` is returned for an absent (`undefined`) value; without one, an absent value is refused. */
interface Defaulted<T> {
  readonly default?: T;
}

/**
 * The checks every option resolver uses (module, Redlock, acquire, consumer, schedule, dashboard).
 * A refused value reads `<verb> <value>; use …`: `got 5; use …` in an `InvalidOptionsError`,
 * `is 5; use …` in an `InvalidJobError` (whose message names the field first). Values are
 * returned as given except durations, which are rounded down to whole milliseconds.
 */
export class OptionValidator {
  constructor(
    /** Throws the resolver's error; every check ends here. */
    readonly refuse: RefuseOption = refuseAsInvalidOption,
    private readonly verb: 'got' | 'is' = 'got',
  ) {}

  /** Refuses `value` of `option`, saying what it was and what to `use` instead. */
  refuseValue(option: string, value: unknown, use: string): never {
    return this.refuse(option, `${this.verb} ${describeValue(value)}; ${use}`);
  }

  /** Milliseconds from `min` to `max` (default: the timer limit), rounded down. */
  duration(option: string, value: unknown, rule: { readonly min: number; readonly max?: number } & Defaulted<number>): number {
    if (value === undefined && rule.default !== undefined) return rule.default;
    const max = rule.max ?? MAX_TIMER_MS;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < rule.min || value > max) {
      return this.refuseValue(option, value, `use a number of milliseconds from ${rule.min} to ${max}`);
    }
    return Math.floor(value);
  }

  /** An integer from `min` to `max`; `use` replaces the standard remedy where a unit or a reason helps. */
  wholeNumber(
    option: string,
    value: unknown,
    rule: { readonly min: number; readonly max: number; readonly use?: string } & Defaulted<number>,
  ): number {
    if (value === undefined && rule.default !== undefined) return rule.default;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < rule.min || value > rule.max) {
      return this.refuseValue(option, value, rule.use ?? `use a whole number from ${rule.min} to ${rule.max}`);
    }
    return value;
  }

  /** Any number `accepts` (NaN included only if it says so); `use` states the accepted range. */
  number(
    option: string,
    value: unknown,
    rule: { readonly accepts: (value: number) => boolean; readonly use: string } & Defaulted<number>,
  ): number {
    if (value === undefined && rule.default !== undefined) return rule.default;
    if (typeof value !== 'number' || !rule.accepts(value)) return this.refuseValue(option, value, rule.use);
    return value;
  }

  flag(option: string, value: unknown, rule: Defaulted<boolean> = {}): boolean {
    if (value === undefined && rule.default !== undefined) return rule.default;
    if (typeof value !== 'boolean') return this.refuseValue(option, value, 'use true or false');
    return value;
  }

  oneOf<T extends string>(option: string, value: unknown, allowed: readonly T[], rule: Defaulted<T> = {}): T {
    if (value === undefined && rule.default !== undefined) return rule.default;
    if (!allowed.includes(value as T)) {
      return this.refuseValue(option, value, `use ${allowed.map((a) => `'${a}'`).join(', ')}`);
    }
    return value as T;
  }
}

/** The validator of options that refuse with `InvalidOptionsError` under their own names. */
export const optionValidator = new OptionValidator();

/** Longest part of a string value quoted in a message. */
const MAX_QUOTED_LENGTH = 40;

/** A refused value as a message shows it: `-1`, `NaN`, `the string "30s"`, `null`, `an array`. */
export function describeValue(value: unknown): string {
  switch (typeof value) {
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value);
    case 'string':
      return `the string ${JSON.stringify(value.length > MAX_QUOTED_LENGTH ? `${value.slice(0, MAX_QUOTED_LENGTH)}…` : value)}`;
    case 'bigint':
      return `the BigInt ${value}n`;
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    default:
      if (value === null) return 'null';
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'an invalid Date' : `the Date ${value.toISOString()}`;
      return Array.isArray(value) ? 'an array' : 'an object';
  }
}
