import { RedisLockError } from '../errors/redis-lock.error.js';

/**
 * A job was scheduled through the transactional outbox while the library's transaction port said a
 * transaction was active, but the outbox store's executor found none to insert the row into (the
 * executor is not the one that runs this transaction, or it is read outside the transaction's
 * async context). Nothing was written: the job is neither in the outbox nor in Redis.
 */
export class OutboxTransactionMissingError extends RedisLockError {
  readonly code = 'OUTBOX_TRANSACTION_MISSING';

  constructor(executor: string) {
    super(
      `The job outbox found no transaction to insert into: ${executor} returned none in this async context. ` +
        'Run schedule() inside the transaction that the outbox executor returns (the same connection or entity manager ' +
        'that runs your writes), or check that the executor is wired to the transaction manager your code uses.',
    );
  }
}
