import { Logger } from '@nestjs/common';
import type { TransactionStatus, TransactionSynchronization } from './transaction-synchronizer.interface.js';
import { errorMessage } from '../errors/error-message.js';

/**
 * The synchronizations registered on one transaction, run once around its end: by the built-in
 * unit of work and by every adapter, so they all behave the same. Internal.
 */
export class SynchronizationList {
  private readonly synchronizations: TransactionSynchronization[] = [];
  private completed = false;

  constructor(private readonly logger: Logger) {}

  /** True once `complete` started: a late `register` must not wait for a hook that already ran. */
  get isCompleted(): boolean {
    return this.completed;
  }

  add(synchronization: TransactionSynchronization): void {
    if (this.completed) throw new Error('register() called after the transaction completed; check isActive() first');
    this.synchronizations.push(synchronization);
  }

  /** Runs `beforeCommit` hooks, including ones registered by earlier hooks. A throw aborts the commit. */
  async beforeCommit(): Promise<void> {
    for (let i = 0; i < this.synchronizations.length; i++) {
      await this.synchronizations[i].beforeCommit?.();
    }
  }

  /** Runs every `afterCompletion` hook once, all of them even if some fail; failures are logged. */
  async complete(status: TransactionStatus): Promise<void> {
    if (this.completed) return;
    this.completed = true;
    await Promise.all(
      this.synchronizations.map(async (s) => {
        try {
          await s.afterCompletion(status);
        } catch (error) {
          this.logger.error(`afterCompletion(${status}) hook failed: ${errorMessage(error)}`);
        }
      }),
    );
  }
}
