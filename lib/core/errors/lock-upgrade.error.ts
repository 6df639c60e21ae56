import { RedisLockError } from './redis-lock.error.js';

/**
 * A holder of a read lock asked for the write side of the same read/write lock. Upgrades are
 * refused: two readers upgrading at once would each wait for the other forever. Release the read
 * hold first, or take the write side from the start (a writer may take the read side: downgrade).
 */
export class LockUpgradeError extends RedisLockError {
  readonly code = 'LOCK_UPGRADE_REFUSED';

  constructor(/** The read/write lock's name. */ readonly key: string) {
    super(
      `Cannot take the write lock of ${JSON.stringify(key)} while holding its read lock (upgrade refused: ` +
        'two readers upgrading at once would deadlock). Release the read lock first, or take the write lock ' +
        'from the start; a writer may take the read lock (downgrade).',
    );
  }
}
