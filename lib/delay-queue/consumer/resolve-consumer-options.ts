import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import type { RedisLockConfig } from '../../core/options/redis-lock-config.js';
import type { BackoffOptions } from '../../core/options/redis-lock-module-options.interface.js';
import { duration } from '../../core/options/resolve-redis-lock-config.js';
import { DEFAULT_MAX_IDLE_WAIT_MS } from '../jobs/delay-queue.constants.js';
import type { ConsumerOptions } from '../interfaces/consumer.interface.js';
import { describe, resolveBackoff } from '../jobs/prepare-job.js';

/** Consumer settings with every default filled in. */
export interface ResolvedConsumerOptions {
  readonly concurrency: number;
  readonly visibilityTimeout: number;
  readonly maxAttempts: number;
  readonly backoff: Required<BackoffOptions>;
  readonly shutdownTimeout: number;
  readonly maxIdleWait: number;
}

/**
 * Validates consumer options over the module's `delayQueue` defaults. `where` names the source in
 * errors, e.g. `@OnDelayed('order.expire') on OrderHandlers.expire` or `consume('order.expire')`.
 *
 * @throws InvalidOptionsError naming the option
 */
export function resolveConsumerOptions(
  options: ConsumerOptions | undefined,
  defaults: RedisLockConfig['delayQueue'],
  where: string,
): ResolvedConsumerOptions {
  const o = options ?? {};
  if (typeof o !== 'object' || o === null) throw new InvalidOptionsError(where, 'consumer options must be an object');
  const name = (option: string) => `${option} (in ${where})`;
  const concurrency = o.concurrency ?? defaults.concurrency;
  if (typeof concurrency !== 'number' || !Number.isInteger(concurrency) || concurrency < 1 || concurrency > 10_000) {
    throw new InvalidOptionsError(name('concurrency'), `got ${describe(concurrency)}; use a whole number from 1 to 10000`);
  }
  const maxAttempts = o.maxAttempts ?? defaults.maxAttempts;
  if (typeof maxAttempts !== 'number' || !Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1_000_000) {
    throw new InvalidOptionsError(name('maxAttempts'), `got ${describe(maxAttempts)}; use a whole number from 1 to 1000000`);
  }
  const backoff =
    o.backoff === undefined
      ? defaults.backoff
      : resolveBackoff(o.backoff, defaults.backoff, (field, problem) => {
          throw new InvalidOptionsError(name(field ? `backoff.${field}` : 'backoff'), problem);
        });
  return {
    concurrency,
    visibilityTimeout: duration(name('visibilityTimeout'), o.visibilityTimeout, defaults.visibilityTimeout, { min: 100 }),
    maxAttempts,
    backoff,
    shutdownTimeout: duration(name('shutdownTimeout'), o.shutdownTimeout, defaults.shutdownTimeout, { min: 0 }),
    maxIdleWait: duration(name('maxIdleWait'), o.maxIdleWait, DEFAULT_MAX_IDLE_WAIT_MS, { min: 100 }),
  };
}
