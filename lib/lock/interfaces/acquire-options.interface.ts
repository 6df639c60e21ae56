/** Per-call options of `LockService.acquire`, `tryAcquire` and `using`. */
export interface AcquireOptions {
  /** Longest wait for a held lock, in ms, before `LockAcquireTimeoutError`. Default: module `lock.waitTimeout`. */
  waitTimeout?: number;
  /**
   * Fixed lease in ms: the lock expires then unless `extend()`ed, and the watchdog does not renew it.
   * Omit it to get the module's lease renewed by the watchdog for as long as you hold the lock.
   */
  leaseTime?: number;
  /** Cancels a pending acquire (`LockAcquireAbortedError`). */
  signal?: AbortSignal;
  /** FIFO hand-off between waiters. Default: module `lock.fair`. */
  fair?: boolean;
}
