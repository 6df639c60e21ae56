import { RedisLockError } from './redis-lock.error.js';

/**
 * The lock was still held by someone else when `waitTimeout` ran out.
 * Raise `waitTimeout`, shorten the critical section, or use `tryAcquire` to not wait at all.
 */
export class LockAcquireTimeoutError extends RedisLockError {
  readonly code = 'LOCK_ACQUIRE_TIMEOUT';

  constructor(
    /** The lock's name as given (the names, for a multi-key lock). */
    readonly key: string | readonly string[],
    /** The `waitTimeout` that ran out, in ms. */
    readonly waitTimeout: number,
  ) {
    super(
      `Could not acquire lock ${formatKey(key)} within ${waitTimeout} ms: it is held by another owner. ` +
        'Raise waitTimeout, shorten the work done under the lock, or use tryAcquire() to fail fast.',
    );
  }
}

function formatKey(key: string | readonly string[]): string {
  return typeof key === 'string' ? JSON.stringify(key) : `[${key.map((k) => JSON.stringify(k)).join(', ')}]`;
}
