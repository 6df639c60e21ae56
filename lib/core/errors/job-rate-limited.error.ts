import { RedisLockError } from './redis-lock.error.js';
import { InvalidOptionsError } from './invalid-options.error.js';

/** The longest topic-wide wait a `JobRateLimitedError` may ask for: one day. */
export const MAX_RATE_LIMITED_RETRY_AFTER_MS = 86_400_000;

/** Whether `value` is a wait a `JobRateLimitedError` may ask for: a whole number of ms from 1 to one day. */
export function isRateLimitWait(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 1 && (value as number) <= MAX_RATE_LIMITED_RETRY_AFTER_MS;
}

/**
 * Thrown by a delayed-job handler when the service it calls is rate limited (an HTTP 429 with
 * `Retry-After`): the job goes back to the queue at its own place without spending an attempt, and
 * no job of its topic is claimed by any instance for `retryAfterMs` (measured on the Redis server's
 * clock); other topics go on. Jobs already claimed into a consumer's buffer may still start (each
 * that hits the limit again goes back the same way). See docs/delayed-jobs.md (Rate limited by the
 * API you call).
 *
 * `retryAfterMs` must be a whole number of milliseconds from 1 to one day (86,400,000); anything else
 * throws `InvalidOptionsError` here, which the handler then throws instead: an ordinary failure, retried
 * with backoff.
 *
 * @example
 * const res = await fetch(url);
 * if (res.status === 429) throw new JobRateLimitedError(Number(res.headers.get('retry-after') ?? 1) * 1000);
 */
export class JobRateLimitedError extends RedisLockError {
  readonly code = 'JOB_RATE_LIMITED';

  constructor(
    /** How long no job of the topic may start, in ms (1 ms to one day). */
    readonly retryAfterMs: number,
  ) {
    if (!isRateLimitWait(retryAfterMs)) {
      throw new InvalidOptionsError(
        'retryAfterMs',
        `got ${String(retryAfterMs)}; JobRateLimitedError takes a whole number of milliseconds from 1 to ` +
          `${MAX_RATE_LIMITED_RETRY_AFTER_MS} (one day)`,
      );
    }
    super(`Rate limited: no job of the topic starts for ${retryAfterMs} ms; the job goes back without spending an attempt.`);
  }
}
