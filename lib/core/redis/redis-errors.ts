import { RedisCommandError } from '../errors/redis-command.error.js';
import { RedisConnectionError } from '../errors/redis-connection.error.js';
import { RedisLockError } from '../errors/redis-lock.error.js';

/** What to do about the server errors users actually meet. */
const HINTS: Array<[RegExp, string]> = [
  [/^OOM/, 'Redis is out of memory (maxmemory reached with a noeviction policy): free memory or raise maxmemory.'],
  [/^READONLY/, 'the client is connected to a read-only replica: point the `redis` option at the primary.'],
  [/^NOPERM/, 'check the username/password and the ACL rules of the `redis` option.'],
  [/^MISCONF/, 'Redis cannot persist to disk and refuses writes: check its disk and its save/appendonly settings.'],
  [/^BUSY/, 'Redis is busy running another script: retry later.'],
  [/^CROSSSLOT/, 'keys of one call hash to different cluster slots; this is a bug in this library, please report it.'],
];

/** Authentication refused by the server (wrong or missing password, unknown user, ACL). */
const AUTH_FAILURE = /WRONGPASS|NOAUTH|NOPERM|invalid password|invalid username-password/i;

/**
 * Turns what the Redis client throws into this library's typed errors: a server's error reply
 * becomes `RedisCommandError`, a connection that is down becomes `RedisConnectionError`; our own
 * errors pass through untouched. `cause`: why the connection failed last (see `RedisReachability`),
 * named in the message because ioredis' own error is often just "Connection is closed.".
 */
export function toRedisLockError(error: unknown, action: string, cause?: string): unknown {
  if (error instanceof RedisLockError || !(error instanceof Error)) return error;
  // The connection's authentication was refused: it cannot be used at all, whatever the command.
  if (error.name === 'ReplyError' && /^(WRONGPASS|NOAUTH)/.test(error.message)) {
    return new RedisConnectionError(
      `Redis refused the connection while trying to ${action}: ${error.message.replace(/\.+$/, '')}. ${AUTH_ADVICE}`,
      error,
    );
  }
  if (error.name === 'ReplyError') {
    const hint = HINTS.find(([pattern]) => pattern.test(error.message))?.[1] ?? 'the command was not applied.';
    return new RedisCommandError(`Redis refused to ${action}: ${error.message} — ${hint}`, error);
  }
  // A driver's connection error may carry no message (node-redis' closed-client errors): name its class.
  const reason = error.message.replace(/\.+$/, '') || (error.name !== 'Error' ? error.name : 'the connection was closed');
  const why = cause && !reason.includes(cause) ? `${reason} (${cause})` : reason;
  return new RedisConnectionError(
    `Redis did not answer while trying to ${action}: ${why}. The client keeps reconnecting; ` +
      `${cause && AUTH_FAILURE.test(cause) ? AUTH_ADVICE : 'check that Redis is up and reachable, then retry.'}`,
    error,
  );
}

const AUTH_ADVICE = 'Authentication failed: check the username and password in the `redis` option (or the URL).';
const REACH_ADVICE = 'Check that the server is running and that the `redis` option (URL, host/port, password, TLS) is right.';

/**
 * A connection error in words: the client's own message, which names the cause (ECONNREFUSED,
 * ENOTFOUND, ETIMEDOUT, the server's WRONGPASS / NOAUTH reply, a socket that got no answer).
 */
export function describeConnectionCause(error: Error): string {
  return error.message.replace(/\.+$/, '');
}

/** What to check for a connection that failed with `error` (authentication, or reachability). */
export function connectionAdvice(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return AUTH_FAILURE.test(message) ? AUTH_ADVICE : REACH_ADVICE;
}

/**
 * The `RedisConnectionError` of a call on a connection that stayed unreachable: where, why (the
 * last connection error), for how long, and what to check.
 */
export function connectionFailureError(
  endpoint: string,
  lastError: Error | undefined,
  details: { action?: string; downForMs?: number },
): RedisConnectionError {
  const cause = lastError ? describeConnectionCause(lastError) : 'the connection is down';
  const doing = details.action ? ` while trying to ${details.action}` : '';
  const since = details.downForMs === undefined ? '' : ` for ${details.downForMs} ms`;
  return new RedisConnectionError(
    `Redis at ${endpoint} is unreachable${since}${doing}: ${cause}. Calls fail at once until the connection is back ` +
      `(the client keeps reconnecting). ${connectionAdvice(lastError)}`,
    lastError,
  );
}
