import { RedisLockError } from './redis-lock.error.js';

/**
 * The lock was taken on the primary, but fewer replicas than `syncReplicas.replicas` confirmed the
 * write within `syncReplicas.timeout` (Redis `WAIT`). A failover now could hand the lock to a second
 * owner, so the acquire was undone (the lock released) and failed instead.
 *
 * Retry later; if it keeps happening, check that the replicas are up and connected (`INFO
 * replication` on the primary), raise `syncReplicas.timeout`, or lower `syncReplicas.replicas`.
 */
export class LockNotReplicatedError extends RedisLockError {
  readonly code = 'LOCK_NOT_REPLICATED';

  constructor(
    /** The lock's name as given (the names, for a multi-key lock). */
    readonly key: string | readonly string[],
    /** Replicas asked for. */
    readonly replicas: number,
    /** Replicas that confirmed in time. */
    readonly acknowledged: number,
    /** The `syncReplicas.timeout` that ran out, in ms. */
    readonly timeout: number,
    options?: { cause?: unknown },
  ) {
    super(
      `Lock ${formatKey(key)} was taken but only ${acknowledged} of ${replicas} required replica(s) confirmed it within ` +
        `${timeout} ms, so it was released again. Retry; if it persists, check the replicas' link to the primary ` +
        '(INFO replication), raise syncReplicas.timeout or lower syncReplicas.replicas.',
      options,
    );
  }
}

function formatKey(key: string | readonly string[]): string {
  return typeof key === 'string' ? JSON.stringify(key) : `[${key.map((k) => JSON.stringify(k)).join(', ')}]`;
}
