import { InvalidOptionsError } from './invalid-options.error.js';

/**
 * A lock kind or option that needs a single Redis was used while the module runs in Redlock mode
 * (`redlock` option). Use the exclusive lock (`acquire`, `tryAcquire`, `using`, `@WithLock`), which
 * is quorum-based in this mode, or import a second `RedisLockModule` without `redlock` for it.
 * Caught as `InvalidOptionsError` (not exported on its own).
 */
export class UnsupportedInRedlockModeError extends InvalidOptionsError {
  override readonly code = 'UNSUPPORTED_IN_REDLOCK_MODE';

  constructor(/** What was asked for. */ readonly feature: 'fair' | 'readWrite' | 'semaphore' | 'syncReplicas') {
    super(
      'redlock',
      `${describe(feature)} is not available in Redlock mode`,
      `${describe(feature)} is not available in Redlock mode: only the exclusive lock (acquire, tryAcquire, using, ` +
        '@WithLock, multi-key) is taken on a quorum of masters. Use the exclusive lock, or a RedisLockModule without ' +
        '`redlock` (on one Redis, Sentinel or Cluster) for this lock.',
    );
  }
}

function describe(feature: UnsupportedInRedlockModeError['feature']): string {
  switch (feature) {
    case 'fair':
      return 'A fair lock (`fair: true`)';
    case 'readWrite':
      return 'A read/write lock (`readWrite()`)';
    case 'semaphore':
      return 'A semaphore (`semaphore()`)';
    case 'syncReplicas':
      return '`syncReplicas`';
  }
}
