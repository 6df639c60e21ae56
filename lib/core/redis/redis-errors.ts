import { RedisCommandError } from '../errors/redis-command.error.js';
import { RedisConnectionError } from '../errors/redis-connection.error.js';
import { RedisLockError } from '../errors/redis-lock.error.js';

/** What to do about the server errors users actually meet. */
const HINTS: Array<[RegExp, string]> = [
  [/^OOM/, 'Redis is out of memory (maxmemory reached with a noeviction policy): free memory or raise maxmemory.'],
  [/^READONLY/, 'the client is connected to a read-only replica: point the `redis` option at the primary.'],
  [/^(NOPERM|NOAUTH|WRONGPASS)/, 'check the username/password and the ACL rules of the `redis` option.'],
  [/^MISCONF/, 'Redis cannot persist to disk and refuses writes: check its disk and its save/appendonly settings.'],
  [/^BUSY/, 'Redis is busy running another script: retry later.'],
  [/^CROSSSLOT/, 'keys of one call hash to different cluster slots; this is a bug in this library, please report it.'],
];

/**
 * Turns what the Redis client throws into this library's typed errors: a server's error reply
 * becomes `RedisCommandError`, a connection that is down becomes `RedisConnectionError`; our own
 * errors pass through untouched.
 */
export function toRedisLockError(error: unknown, action: string): unknown {
  if (error instanceof RedisLockError || !(error instanceof Error)) return error;
  if (error.name === 'ReplyError') {
    const hint = HINTS.find(([pattern]) => pattern.test(error.message))?.[1] ?? 'the command was not applied.';
    return new RedisCommandError(`Redis refused to ${action}: ${error.message} — ${hint}`, error);
  }
  return new RedisConnectionError(
    `Redis did not answer while trying to ${action}: ${error.message.replace(/\.+$/, '')}. The client keeps reconnecting; ` +
      'check that Redis is up and reachable, then retry.',
    error,
  );
}
