import type { LockLostError } from '../errors/lock-lost.error.js';

/**
 * A lock was taken (`lock.acquired`). One event per key: a multi-key lock emits one for each of its keys.
 */
export interface LockAcquiredEvent {
  /** The name the caller gave (the key of a mutex, read/write lock or semaphore), never the Redis key. */
  readonly key: string;
  /** The caller's `keyPattern` (`@WithLock`: its key template), if any: a low-cardinality name for the key. */
  readonly keyPattern?: string;
  /** The hold's fencing token (see `LockHandle.fencingToken`). */
  readonly fencingToken: string;
  /** Time from the call to the lock being held (monotonic clock), including every wait. */
  readonly waitMs: number;
}

/**
 * A hold ended by `release()` (`lock.released`); inside a transaction, when the transaction ended.
 */
export interface LockReleasedEvent {
  /** The name the caller gave, as in `LockAcquiredEvent`. */
  readonly key: string;
  /** As in `LockAcquiredEvent`; known only under the same condition as `holdMs`. */
  readonly keyPattern?: string;
  /** The hold's fencing token (see `LockHandle.fencingToken`). */
  readonly fencingToken: string;
  /**
   * Time the lock was held. Measured only when someone listened to `lock.released` or `lock.lost`
   * at the moment the lock was taken (subscribe at startup); otherwise `undefined`.
   */
  readonly holdMs: number | undefined;
}

/**
 * A held lock's lease was lost (`lock.lost`); its handle's signal has been aborted with `error`.
 */
export interface LockLostEvent {
  /** The name the caller gave, as in `LockAcquiredEvent`. */
  readonly key: string;
  /** As in `LockAcquiredEvent`; known only under the same condition as `holdMs`. */
  readonly keyPattern?: string;
  /** The hold's fencing token (see `LockHandle.fencingToken`). Writes fenced with it are now refused. */
  readonly fencingToken: string;
  /** The error the handle's `signal` was aborted with (its `reason` says why the lease was lost). */
  readonly error: LockLostError;
  /** Time from acquisition to the loss; `undefined` under the same condition as `LockReleasedEvent.holdMs`. */
  readonly holdMs: number | undefined;
}

/**
 * A lock was not free in time (`lock.timeout`): `acquire()` rejected with `LockAcquireTimeoutError`,
 * or `tryAcquire()` resolved `null` (then `waitTimeout` is 0).
 */
export interface LockTimeoutEvent {
  /** The key that could not be taken (for a multi-key lock: the first key of the sorted set that was not free). */
  readonly key: string;
  /** As in `LockAcquiredEvent`. */
  readonly keyPattern?: string;
  /** The `waitTimeout` the call gave (ms); 0 for `tryAcquire()`. */
  readonly waitTimeout: number;
  /** Time actually spent before giving up. */
  readonly waitMs: number;
}
