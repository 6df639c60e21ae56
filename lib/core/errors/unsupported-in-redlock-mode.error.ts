import { InvalidOptionsError } from './invalid-options.error.js';

/**
 * A lock kind or option that needs a single Redis was used while the module runs in Redlock mode
 * (`redlock` option). Use the exclusive lock (`acquire`, `tryAcquire`, `using`, `@WithLock`), which
 * is quorum-based in this mode, or import a second `RedisLockModule` without `redlock` for it.
 * Caught as `InvalidOptionsError` (not exported on its own).
 */
export class UnsupportedInRedlockModeError extends InvalidOptionsError {
  override readonly code = 'UNSUPPORTED_IN_REDLOCK_MODE';

  /**
   * @param feature what was asked for: a lock kind's name (`'fair'`, `'read-write'`, `'semaphore'`) or an option (`'syncReplicas'`)
   * @param described how the message names it, e.g. "A semaphore (`semaphore()`)"
   */
  constructor(
    readonly feature: string,
    described: string,
  ) {
    super(
      'redlock',
      `${described} is not available in Redlock mode`,
      `${described} is not available in Redlock mode: only the exclusive lock (acquire, tryAcquire, using, ` +
        '@WithLock, multi-key) is taken on a quorum of masters. Use the exclusive lock, or a RedisLockModule without ' +
        '`redlock` (on one Redis, Sentinel or Cluster) for this lock.',
    );
  }
}
