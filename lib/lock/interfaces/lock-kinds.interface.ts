import type { AcquireOptions } from './acquire-options.interface.js';
import type { LockHandle } from './lock-handle.interface.js';

/**
 * Options of the read/write lock and semaphore (`fair` does not apply to them).
 *
 * @inline
 */
export type LockKindOptions = Omit<AcquireOptions, 'fair'>;

/** Both sides of one read/write lock, from `LockService.readWrite(key)`. */
export interface ReadWriteLock {
  /** Shared hold: waits while a writer holds the lock or waits for it. */
  read(options?: LockKindOptions): Promise<LockHandle>;
  /** Exclusive hold: waits until no reader or writer holds the lock. */
  write(options?: LockKindOptions): Promise<LockHandle>;
  /** Read hold if available right now, else `null`. */
  tryRead(options?: LockKindOptions): Promise<LockHandle | null>;
  /** Write hold if available right now, else `null`. */
  tryWrite(options?: LockKindOptions): Promise<LockHandle | null>;
}

/** A counting semaphore with leased permits, from `LockService.semaphore(key, permits)`. */
export interface Semaphore {
  /** Takes a permit, waiting up to `waitTimeout` for one to come back. */
  acquire(options?: LockKindOptions): Promise<LockHandle>;
  /** Takes a permit if one is free right now, else `null`. */
  tryAcquire(options?: LockKindOptions): Promise<LockHandle | null>;
}
