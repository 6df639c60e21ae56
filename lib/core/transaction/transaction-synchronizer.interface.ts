/** How a transaction ended, as reported to `afterCompletion`. */
export type TransactionStatus = 'committed' | 'rolled-back';

/** Callbacks run around the end of the current transaction. */
export interface TransactionSynchronization {
  /** Runs before COMMIT; a throw rolls the transaction back. */
  beforeCommit?(): Promise<void> | void;
  /** Runs after COMMIT or ROLLBACK. Errors here are logged, never thrown into the transaction. */
  afterCompletion(status: TransactionStatus): Promise<void> | void;
}

/**
 * The port between this library and whatever runs database transactions in the application.
 * A lock released inside an active transaction is released in `afterCompletion`; a job scheduled
 * inside one is enqueued only after commit.
 *
 * Implement it to plug in any transaction manager; the built-in `UnitOfWork` and the adapters under
 * `nestjs-redis-lock/transaction/*` are implementations.
 */
export interface TransactionSynchronizer {
  /** True while the calling async context runs inside a transaction. */
  isActive(): boolean;
  /** Registers callbacks on the current transaction. Only called when `isActive()` is true. */
  register(synchronization: TransactionSynchronization): void;
  /**
   * The current transaction's identity (the same object for as long as it runs), or `undefined`.
   * Optional: with it, a lock whose release waits for this transaction can be taken again inside
   * the same transaction (it re-enters the hold it keeps) instead of waiting for itself until COMMIT.
   */
  currentTransaction?(): object | undefined;
}

/** Injection token of the active `TransactionSynchronizer` (same name as the interface, like nestjs/throttler). */
export const TransactionSynchronizer = Symbol.for('nestjs-redis-lock:TransactionSynchronizer');
