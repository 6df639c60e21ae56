import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import type { RedisLockConfig } from '../../core/options/redis-lock-config.js';
import type { BackoffOptions } from '../../core/options/redis-lock-module-options.interface.js';
import { OPTION_BOUNDS } from '../../core/options/option-bounds.js';
import { OptionValidator } from '../../core/options/option-validation.js';
import { resolveBackoff } from '../../core/options/retry-backoff.js';
import { DEFAULT_MAX_IDLE_WAIT_MS } from '../jobs/delay-queue.constants.js';
import { keysOf, refuseUnknownKeys } from '../../core/options/known-option-keys.js';
import type { ConsumerOptions, KeepCompletedOptions } from '../interfaces/consumer.interface.js';
import type { OnDelayedMetadata } from '../interfaces/on-delayed-metadata.interface.js';

/** The keys of `consume()`'s options. */
export const CONSUMER_OPTION_KEYS = keysOf<ConsumerOptions>()([
  'concurrency',
  'visibilityTimeout',
  'maxAttempts',
  'backoff',
  'shutdownTimeout',
  'maxIdleWait',
  'rateLimit',
  'groupConcurrency',
  'keepCompleted',
]);

/** The keys of `rateLimit`. */
const RATE_LIMIT_KEYS = keysOf<NonNullable<ConsumerOptions['rateLimit']>>()(['max', 'duration']);

const KEEP_COMPLETED_KEYS = keysOf<KeepCompletedOptions>()(['count', 'age']);

/** The keys of `@OnDelayed`'s options: the consumer's and `repeat`. */
export const ON_DELAYED_OPTION_KEYS = keysOf<NonNullable<OnDelayedMetadata['options']>>()([...CONSUMER_OPTION_KEYS, 'repeat']);

/** Consumer settings with every default filled in. */
export interface ResolvedConsumerOptions {
  readonly concurrency: number;
  readonly visibilityTimeout: number;
  readonly maxAttempts: number;
  readonly backoff: Required<BackoffOptions>;
  readonly shutdownTimeout: number;
  readonly maxIdleWait: number;
  /** Absent: no limit. */
  readonly rateLimit?: { readonly max: number; readonly duration: number };
  /** Absent: 1 (the consumer sets the topic's setting back to the default). */
  readonly groupConcurrency?: number;
  /**
   * Absent: completed jobs are deleted. `count` and `age` 0 when not given (no bound);
   * `maxResultBytes`, the largest result kept, is `delayQueue.maxPayloadBytes`.
   */
  readonly keepCompleted?: { readonly count: number; readonly age: number; readonly maxResultBytes: number };
}

/**
 * Validates consumer options over the module's `delayQueue` defaults. `where` names the source in
 * errors, e.g. `@OnDelayed on OrderHandlers.expire` or `consume("order.expire")`; `known` are the
 * keys its options may have (`ON_DELAYED_OPTION_KEYS` for `@OnDelayed`, whose `repeat` is checked
 * where it is read).
 *
 * @throws InvalidOptionsError naming the option (its path) and, in the message, `where`
 */
export function resolveConsumerOptions(
  options: ConsumerOptions | undefined,
  defaults: RedisLockConfig['delayQueue'],
  where: string,
  known: readonly string[] = CONSUMER_OPTION_KEYS,
): ResolvedConsumerOptions {
  const o = options ?? {};
  if (typeof o !== 'object' || o === null) throw new InvalidOptionsError('options', `consumer options must be an object (in ${where})`);
  const validate = new OptionValidator((option, problem) => {
    throw new InvalidOptionsError(option, `${problem} (in ${where})`);
  });
  refuseUnknownKeys(validate.refuse, '', o, known);
  return {
    concurrency: validate.wholeNumber('concurrency', o.concurrency, { ...OPTION_BOUNDS.concurrency, default: defaults.concurrency }),
    visibilityTimeout: validate.duration('visibilityTimeout', o.visibilityTimeout, {
      ...OPTION_BOUNDS.visibilityTimeout,
      default: defaults.visibilityTimeout,
    }),
    maxAttempts: validate.wholeNumber('maxAttempts', o.maxAttempts, { ...OPTION_BOUNDS.maxAttempts, default: defaults.maxAttempts }),
    backoff: resolveBackoff(validate, 'backoff', o.backoff, defaults.backoff),
    shutdownTimeout: validate.duration('shutdownTimeout', o.shutdownTimeout, {
      ...OPTION_BOUNDS.shutdownTimeout,
      default: defaults.shutdownTimeout,
    }),
    maxIdleWait: validate.duration('maxIdleWait', o.maxIdleWait, { min: 100, default: DEFAULT_MAX_IDLE_WAIT_MS }),
    rateLimit: o.rateLimit === undefined ? undefined : resolveRateLimit(validate, o.rateLimit),
    groupConcurrency:
      o.groupConcurrency === undefined ? undefined : validate.wholeNumber('groupConcurrency', o.groupConcurrency, { min: 1, max: 10_000 }),
    keepCompleted: resolveKeepCompleted(validate, o.keepCompleted, defaults.maxPayloadBytes),
  };
}

function resolveKeepCompleted(validate: OptionValidator, keep: unknown, maxResultBytes: number): ResolvedConsumerOptions['keepCompleted'] {
  if (keep === undefined) return undefined;
  if (typeof keep !== 'object' || keep === null || Array.isArray(keep)) {
    return validate.refuseValue('keepCompleted', keep, 'use an object { count?, age? } with at least one of them');
  }
  refuseUnknownKeys(validate.refuse, 'keepCompleted', keep, KEEP_COMPLETED_KEYS);
  const { count, age } = keep as KeepCompletedOptions;
  if (count === undefined && age === undefined) {
    return validate.refuse(
      'keepCompleted',
      'has neither `count` nor `age`; give at least one bound, or leave keepCompleted out to delete completed jobs',
    );
  }
  return {
    count: validate.wholeNumber('keepCompleted.count', count, { min: 1, max: Number.MAX_SAFE_INTEGER, default: 0 }),
    // Not a timer: longer than setTimeout's limit is fine (30 days of history, say).
    age: validate.wholeNumber('keepCompleted.age', age, {
      min: 1,
      max: Number.MAX_SAFE_INTEGER,
      use: 'use a whole number of milliseconds from 1',
      default: 0,
    }),
    maxResultBytes,
  };
}

function resolveRateLimit(validate: OptionValidator, rateLimit: unknown): { max: number; duration: number } {
  if (typeof rateLimit !== 'object' || rateLimit === null || Array.isArray(rateLimit)) {
    return validate.refuseValue('rateLimit', rateLimit, 'use { max, duration }, e.g. { max: 100, duration: 1000 }');
  }
  const r = rateLimit as { max?: unknown; duration?: unknown };
  refuseUnknownKeys(validate.refuse, 'rateLimit', r, RATE_LIMIT_KEYS);
  if (r.max === undefined) validate.refuse('rateLimit.max', 'is missing; give the most handler starts per duration, e.g. 100');
  if (r.duration === undefined) validate.refuse('rateLimit.duration', 'is missing; give the window in ms, e.g. 1000');
  return {
    max: validate.wholeNumber('rateLimit.max', r.max, { min: 1, max: 1_000_000 }),
    duration: validate.duration('rateLimit.duration', r.duration, { min: 1 }),
  };
}
