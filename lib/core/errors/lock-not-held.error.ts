import { RedisLockError } from './redis-lock.error.js';

/** `extend()` was called on a lock this owner no longer holds (released, expired or taken over). */
export class LockNotHeldError extends RedisLockError {
  readonly code = 'LOCK_NOT_HELD';

  constructor(
    /** The lock's name as given. */
    readonly key: string,
    action: string,
  ) {
    super(
      `Cannot ${action} lock ${JSON.stringify(key)}: it is not held by this owner any more ` +
        '(released, expired, or taken by another owner). Acquire it again.',
    );
  }
}
