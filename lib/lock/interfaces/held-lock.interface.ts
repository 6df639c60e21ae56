/** A holder of a lock: an owner id (`<clientId>:<contextId>`), its reentry count, mode and lease. */
export interface LockHolder {
  /** The owner id, `<clientId>:<contextId>` (for a semaphore: the permit's owner). */
  readonly owner: string;
  /** Reentry count (nested acquires by the same owner). */
  readonly count?: number;
  /** Read/write locks: 'read' or 'write'. */
  readonly mode?: 'read' | 'write';
  /** Lease left for this holder, in ms (read/write holders and semaphore permits have their own). */
  readonly leaseMs?: number;
}

/** A lock held at the time of the read. */
export interface HeldLock {
  /**
   * The name of its kind in LOCK_KINDS: `mutex`, `read-write`, `semaphore` (a fair lock reads as
   * `mutex`: the same owner hash; its queue is counted in `waiting`).
   */
  readonly kind: string;
  /** The lock's name as given to `LockService`, e.g. `order:42`. */
  readonly name: string;
  /** The Redis key of the owner hash (or semaphore zset). */
  readonly key: string;
  /** Its holders (a semaphore: the permits taken). */
  readonly holders: LockHolder[];
  /** Current value of the fencing counter: the token of the current holder(s); for a semaphore, the last one handed out. */
  readonly fencingToken: string | null;
  /** Lease left on the key, in ms (-1: no expiry). */
  readonly leaseMs: number;
  /** Waiters queued on a fair lock. */
  readonly waiting: number;
}
