/** Delay before the first reconnect attempt, in ms. */
export const RECONNECT_FIRST_DELAY_MS = 25;

/** Longest delay between two reconnect attempts (before jitter), in ms. */
export const RECONNECT_MAX_DELAY_MS = 1_000;

/** Random share added on top of each delay, so many clients cut off together do not retry in step. */
const RECONNECT_JITTER = 0.25;

/**
 * The reconnect policy of the connections this module creates, when the options do not set a
 * `retryStrategy`: 25 ms, then doubling up to 1 s, each plus 0-25 % random jitter (25-31 ms,
 * 50-62 ms, 100-125 ms, … at most 1.25 s). Never gives up.
 *
 * A lock lease is seconds long, and a command whose reply was lost is re-sent only once the
 * connection is back: after a blip the connection must be ready again within a fraction of a
 * lease, and in Redlock mode within `requestTimeout`, for the re-sent reply to still count.
 * ioredis 6's default (50 ms doubling up to 5 s, plus 0-200 ms) can take 250 ms on the first
 * attempt and 5 s after a longer outage; ioredis 5's was `min(n * 50, 2000)`.
 *
 * How long a command queued while Redis is down waits is not this policy's business: on the
 * connections the module builds, `unreachableTimeout` (2 s) bounds it (see `RedisReachability`).
 * Left to ioredis' `maxRetriesPerRequest` (20 by default) it would fail after 16-20 s of failed
 * attempts under this policy (10.5 s under ioredis 5's default, 71-75 s under ioredis 6's).
 *
 * @param attempt ioredis' one-based count of attempts since the connection was last ready.
 * @param random source of randomness in [0, 1), for tests.
 * @example
 * new Redis({ host: 'redis', retryStrategy: lockReconnectStrategy })
 */
export function lockReconnectStrategy(attempt: number, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(Math.floor(attempt), 1) - 1, 30);
  const delay = Math.min(RECONNECT_FIRST_DELAY_MS * 2 ** exponent, RECONNECT_MAX_DELAY_MS);
  return Math.floor(delay * (1 + RECONNECT_JITTER * random()));
}
