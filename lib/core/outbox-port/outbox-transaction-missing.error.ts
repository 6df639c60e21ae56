import { RedisLockError } from '../errors/redis-lock.error.js';

/**
 * The library's transaction port (the `transactions` option) and the outbox store's executor
 * disagree on whether a transaction runs, so a job cannot be placed in it. Nothing was written: the
 * job is neither in the outbox nor in Redis.
 *
 * - `missingFrom: 'executor'`: the port said a transaction was active, but the executor found none
 *   to insert the row into (it is not the one that runs this transaction, or it is read outside the
 *   transaction's async context).
 * - `missingFrom: 'transaction port'`: the executor sees a transaction, but the port says none is
 *   active (e.g. BEGIN…COMMIT run without `runInTransaction` around it): the job would have been
 *   written to Redis at once, before COMMIT, and kept on ROLLBACK.
 */
export class OutboxTransactionMissingError extends RedisLockError {
  readonly code = 'OUTBOX_TRANSACTION_MISSING';

  constructor(
    executor: string,
    /** Which side found no transaction. */
    readonly missingFrom: 'executor' | 'transaction port' = 'executor',
  ) {
    super(
      missingFrom === 'executor'
        ? `The job outbox found no transaction to insert into: ${executor} returned none in this async context. ` +
            'Run schedule() inside the transaction that the outbox executor returns (the same connection or entity manager ' +
            'that runs your writes), or check that the executor is wired to the transaction manager your code uses.'
        : `schedule() ran inside a transaction that ${executor} sees, but the transaction port (the \`transactions\` option) ` +
            'reports none, so the job would go to Redis at once, before COMMIT. Wrap the code that runs BEGIN…COMMIT in ' +
            'runInTransaction() (the default port), or set `transactions` to the synchronizer of your transaction manager.',
    );
  }
}
