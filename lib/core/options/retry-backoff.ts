import { refuseUnknownKeys } from './known-option-keys.js';
import { MODULE_OPTION_KEYS } from './module-option-keys.js';
import type { OptionValidator } from './option-validation.js';
import type { BackoffOptions } from './redis-lock-module-options.interface.js';

/** The module's backoff when `delayQueue.backoff` leaves a field out. */
export const DEFAULT_BACKOFF: Readonly<Required<BackoffOptions>> = { delay: 1_000, factor: 2, maxDelay: 3_600_000, jitter: 0.2 };

/**
 * A `BackoffOptions` (module, consumer or job level) merged over `base`, every field checked;
 * `option` is the path refusals name (`delayQueue.backoff`, `backoff`), each field under it.
 * Absent means `base`; anything else that is not an object, or a key it does not know, is refused.
 */
export function resolveBackoff(
  validate: OptionValidator,
  option: string,
  value: unknown,
  base: Required<BackoffOptions>,
): Required<BackoffOptions> {
  if (value === undefined) return { ...base };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return validate.refuse(option, 'must be an object');
  refuseUnknownKeys(validate.refuse, option, value, MODULE_OPTION_KEYS.backoff);
  const given = value as BackoffOptions;
  return {
    delay: validate.duration(`${option}.delay`, given.delay, { min: 0, default: base.delay }),
    factor: validate.number(`${option}.factor`, given.factor, {
      accepts: (n) => Number.isFinite(n) && n >= 1,
      use: 'use a finite number >= 1',
      default: base.factor,
    }),
    maxDelay: validate.duration(`${option}.maxDelay`, given.maxDelay, { min: 0, default: base.maxDelay }),
    jitter: validate.number(`${option}.jitter`, given.jitter, {
      accepts: (n) => n >= 0 && n <= 1,
      use: 'use a number from 0 to 1',
      default: base.jitter,
    }),
  };
}

/**
 * The wait before the next try after try number `attempt` (from 1) failed: `delay * factor^(attempt-1)`,
 * capped at `maxDelay`, minus a random share of up to `jitter` of it; whole milliseconds, never above the cap.
 */
export function backoffDelay(backoff: Required<BackoffOptions>, attempt: number): number {
  const exponential = backoff.delay * Math.pow(backoff.factor, Math.max(0, attempt - 1));
  const capped = Math.min(backoff.maxDelay, exponential);
  return Math.round(capped * (1 - backoff.jitter * Math.random()));
}
