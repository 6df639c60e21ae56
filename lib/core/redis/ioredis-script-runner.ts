import type { RedisClient } from '../options/redis-lock-config.js';
import { RedisReachability } from './reachability.js';
import { toRedisLockError } from './redis-errors.js';
import type { RedisScript } from './redis-script.js';

/**
 * Runs `script` on an ioredis client: EVALSHA, and EVAL with the body only when the server does not
 * know the script yet (first use, restart, failover, SCRIPT FLUSH), which also caches it. One round
 * trip in the common case, and no `defineCommand` mutating a client the user may own. Redis and
 * connection failures reject with the library's typed errors.
 */
export function runScriptOn<T>(
  client: RedisClient,
  script: RedisScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<T> {
  // Plain promise chaining, no async wrapper: this sits on the hot path of every lock operation.
  return (client.evalsha(script.sha, keys.length, ...keys, ...args) as Promise<T>).catch((error: unknown) => {
    if (!isNoScript(error)) throw toRedisLockError(error, `run ${script.name}`, RedisReachability.of(client)?.cause);
    return (client.eval(script.source, keys.length, ...keys, ...args) as Promise<T>).catch((evalError: unknown) => {
      throw toRedisLockError(evalError, `run ${script.name}`, RedisReachability.of(client)?.cause);
    });
  });
}

/**
 * Redis's NOSCRIPT reply, also when an ioredis Cluster wraps it ("Too many Cluster redirections.
 * Last error: NOSCRIPT ..."), which happens when a failover promotes a replica whose script cache is empty.
 */
function isNoScript(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.message.startsWith('NOSCRIPT') || /Last error: (ReplyError: )?NOSCRIPT/.test(error.message);
}
