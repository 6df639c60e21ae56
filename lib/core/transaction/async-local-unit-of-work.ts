import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@nestjs/common';
import { SynchronizationList } from './synchronization-list.js';
import type { TransactionSynchronization, TransactionSynchronizer } from './transaction-synchronizer.interface.js';

/**
 * The default `TransactionSynchronizer`: a unit of work carried by AsyncLocalStorage.
 *
 * Wrap the code that runs (and commits) your database transaction in `runInTransaction`; locks
 * released and jobs scheduled inside it take effect when it completes. A nested call joins the
 * outer unit of work, like REQUIRED propagation.
 *
 * @example
 * await runInTransaction(async () => {
 *   await db.query('BEGIN');
 *   const lock = await locks.acquire(`order:${id}`);
 *   await db.query('UPDATE orders SET paid = true WHERE id = $1', [id]);
 *   await lock.release();            // deferred: happens after the unit of work ends
 *   await db.query('COMMIT');
 * });
 */
export class AsyncLocalUnitOfWork implements TransactionSynchronizer {
  private readonly storage = new AsyncLocalStorage<SynchronizationList>();
  private readonly logger = new Logger('RedisLockTransactions');

  isActive(): boolean {
    const current = this.storage.getStore();
    return current !== undefined && !current.isCompleted;
  }

  register(synchronization: TransactionSynchronization): void {
    const current = this.storage.getStore();
    if (!current) throw new Error('register() called outside a unit of work; check isActive() first');
    current.add(synchronization);
  }

  currentTransaction(): object | undefined {
    return this.isActive() ? this.storage.getStore() : undefined;
  }

  /** Runs `work` as a unit of work; joins the current one when already inside one. */
  async run<T>(work: () => Promise<T> | T): Promise<T> {
    if (this.isActive()) return work();
    const synchronizations = new SynchronizationList(this.logger);
    let result: T;
    try {
      result = await this.storage.run(synchronizations, work);
      await synchronizations.beforeCommit();
    } catch (error) {
      await synchronizations.complete('rolled-back');
      throw error;
    }
    await synchronizations.complete('committed');
    return result;
  }
}

/** The unit of work used when the module is given no `transactions` option. */
export const defaultUnitOfWork = new AsyncLocalUnitOfWork();

/** Runs `work` as a unit of work of the default synchronizer. See `AsyncLocalUnitOfWork`. */
export function runInTransaction<T>(work: () => Promise<T> | T): Promise<T> {
  return defaultUnitOfWork.run(work);
}
