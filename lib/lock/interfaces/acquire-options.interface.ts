import type { SyncReplicasOptions } from '../../core/options/redis-lock-module-options.interface.js';

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
  /**
   * A low-cardinality name for this kind of lock, used as the metric label and span attribute
   * instead of the raw key (`'order:<id>'` for `order:42`). `@WithLock` passes its key template.
   * Default: derived from the key by the metrics module's classifier.
   */
  keyPattern?: string;
  /**
   * Wait for this many replicas to confirm the acquire (Redis `WAIT`) before returning, or `false` to
   * skip a module-wide `lock.syncReplicas`. Too few in time: the lock is released and the acquire
   * throws `LockNotReplicatedError`. Default: module `lock.syncReplicas` (off).
   */
  syncReplicas?: SyncReplicasOptions | false;
}

/** Per-call options after validation and defaults. Internal. */
export interface ResolvedAcquireOptions {
  readonly waitTimeout: number;
  readonly leaseTime: number;
  readonly watchdog: boolean;
  readonly signal?: AbortSignal;
  readonly fair: boolean;
  readonly keyPattern?: string;
  /** Replica acknowledgement required before the lock is handed out; undefined when off. */
  readonly syncReplicas?: SyncReplicasOptions;
}
