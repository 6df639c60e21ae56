import { Inject, Injectable } from '@nestjs/common';
import { TransactionSynchronizer } from '../core/transaction/transaction-synchronizer.interface.js';
import type { HeldLockHandle } from './held-lock-handle.js';
import { KeptHolds } from './kept-holds.js';
import type { LockProtocol } from './protocols/lock-protocol.interface.js';

/** A kept hold checked out for one acquire in its transaction (see `TransactionHolds.checkOut`). */
export interface CheckedOutHold {
  readonly transaction: object;
  readonly handle: HeldLockHandle;
}

/**
 * Locks held for a transaction: a release inside an active transaction waits for the transaction's
 * end (the watchdog keeps renewing meanwhile; the lease is the backstop), and the same transaction
 * may re-enter a hold whose release waits for it instead of waiting for its own deferred release
 * until COMMIT. `LockHoldRegistry` defers releases here; `LockAcquirer` checks kept holds out.
 *
 * One per module instance.
 */
@Injectable()
export class TransactionHolds {
  private readonly kept = new KeptHolds();

  constructor(@Inject(TransactionSynchronizer) private readonly transactions: TransactionSynchronizer) {}

  /** Whether a transaction is active here: only then is a release deferred or a kept hold re-entered. */
  get active(): boolean {
    return this.transactions.isActive();
  }

  /**
   * Takes out the live kept hold of `protocol`'s lock that the current transaction's deferred
   * releases left, if any: the acquire re-enters its owner, then reports `reentered` or `putBack`.
   */
  checkOut(protocol: LockProtocol): CheckedOutHold | undefined {
    const transaction = this.transactions.isActive() ? this.transactions.currentTransaction?.() : undefined;
    const handle = transaction && this.kept.checkOut(transaction, protocol);
    return handle ? { transaction, handle } : undefined;
  }

  /** `handle` was acquired by re-entering `checkedOut`. */
  reentered(checkedOut: CheckedOutHold, handle: HeldLockHandle): void {
    this.kept.reentered(checkedOut.transaction, checkedOut.handle, handle);
  }

  /** A checked-out hold was not re-entered after all: it is kept again. */
  putBack(checkedOut: CheckedOutHold): void {
    this.kept.putBack(checkedOut.transaction, checkedOut.handle);
  }

  /**
   * Defers `handle`'s release to the end of the active transaction, when one is active: marks it
   * pending, keeps it for re-entry by the same transaction, and runs `release` in `afterCompletion`
   * (commit or rollback). Returns false, doing nothing, outside a transaction.
   */
  deferRelease(handle: HeldLockHandle, release: (handle: HeldLockHandle) => Promise<unknown>): boolean {
    if (!this.transactions.isActive()) return false;
    // The lock must outlive COMMIT, or a second worker could act on data the first has not
    // committed yet.
    handle.releasePending = true;
    const transaction = handle.protocol.reentrancyKey === undefined ? undefined : this.transactions.currentTransaction?.();
    if (transaction) this.kept.keep(transaction, handle);
    this.transactions.register({
      afterCompletion: async () => {
        if (transaction) this.kept.forget(transaction, handle);
        await release(handle);
      },
    });
    return true;
  }

  /** `handle` is released before its transaction ended (never used): the hold it re-entered is available again. */
  undone(handle: HeldLockHandle): void {
    this.kept.undone(handle);
  }
}
