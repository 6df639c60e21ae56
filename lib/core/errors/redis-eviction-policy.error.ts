import { RedisLockError } from './redis-lock.error.js';

/**
 * The Redis server may evict keys (`maxmemory-policy` is not `noeviction`): it could drop a held
 * lock or a fencing counter under memory pressure, so two owners could hold one lock. Thrown at
 * bootstrap unless the `evictionPolicyCheck` module option says `'warn'` or `'off'`.
 */
export class RedisEvictionPolicyError extends RedisLockError {
  readonly code = 'REDIS_EVICTION_POLICY';

  constructor(
    /** The server, as `host:port`. */
    readonly endpoint: string,
    /** Its `maxmemory-policy`, e.g. `allkeys-lru`. */
    readonly policy: string,
  ) {
    super(
      `Redis at ${endpoint} runs with maxmemory-policy "${policy}": under memory pressure it may evict lock keys ` +
        'and fencing counters, so a lock could be granted twice and a fencing token repeat. Set maxmemory-policy to ' +
        'noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction), or use a separate Redis for locks and jobs. ' +
        "To start anyway, pass evictionPolicyCheck: 'warn' (or 'off') to RedisLockModule.forRoot().",
    );
  }
}
