import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@nestjs/common';
import type {
  TransactionStatus,
  TransactionSynchronization,
  TransactionSynchronizer,
} from './transaction-synchronizer.interface';

interface UnitOfWorkFrame {
  readonly synchronizations: TransactionSynchronization[];
}

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
  private readonly storage = new AsyncLocalStorage<UnitOfWorkFrame>();
  private readonly logger = new Logger('RedisLockTransactions');

  isActive(): boolean {
    return this.storage.getStore() !== undefined;
  }

  register(synchronization: TransactionSynchronization): void {
    const frame = this.storage.getStore();
    if (!frame) throw new Error('register() called outside a unit of work; check isActive() first');
    frame.synchronizations.push(synchronization);
  }

  /** Runs `work` as a unit of work; joins the current one when already inside one. */
  async run<T>(work: () => Promise<T> | T): Promise<T> {
    if (this.isActive()) return work();
    const frame: UnitOfWorkFrame = { synchronizations: [] };
    let result: T;
    try {
      result = await this.storage.run(frame, work);
      // beforeCommit hooks may register more synchronizations; run until none is left unvisited.
      for (let i = 0; i < frame.synchronizations.length; i++) {
        await frame.synchronizations[i].beforeCommit?.();
      }
    } catch (error) {
      await this.complete(frame, 'rolled-back');
      throw error;
    }
    await this.complete(frame, 'committed');
    return result;
  }

  private async complete(frame: UnitOfWorkFrame, status: TransactionStatus): Promise<void> {
    // Completion hooks must all run even if one fails: each releases a lock or enqueues a job.
    await Promise.all(
      frame.synchronizations.map(async (s) => {
        try {
          await s.afterCompletion(status);
        } catch (error) {
          this.logger.error(`afterCompletion(${status}) hook failed: ${(error as Error)?.message ?? error}`);
        }
      }),
    );
  }
}

/** The unit of work used when the module is given no `transactions` option. */
export const defaultUnitOfWork = new AsyncLocalUnitOfWork();

/** Runs `work` as a unit of work of the default synchronizer. See `AsyncLocalUnitOfWork`. */
export function runInTransaction<T>(work: () => Promise<T> | T): Promise<T> {
  return defaultUnitOfWork.run(work);
}
