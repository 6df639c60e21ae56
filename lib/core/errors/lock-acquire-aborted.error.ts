import { RedisLockError } from './redis-lock.error.js';

/** The caller's `AbortSignal` fired while the acquire was waiting. `cause` is the signal's reason. */
export class LockAcquireAbortedError extends RedisLockError {
  readonly code = 'LOCK_ACQUIRE_ABORTED';

  constructor(
    /** The lock's name as given (the names, for a multi-key lock). */
    readonly key: string | readonly string[],
    reason: unknown,
  ) {
    super(`Acquiring lock ${JSON.stringify(key)} was aborted by the caller's signal.`, { cause: reason });
  }
}
