/**
 * `nestjs-redis-lock/outbox/postgres`: the transactional outbox on PostgreSQL. A job scheduled inside a
 * database transaction is written to an outbox table in that transaction and relayed to Redis after it
 * commits, even if the process dies right after COMMIT; nothing is enqueued on ROLLBACK.
 *
 * @module nestjs-redis-lock/outbox/postgres
 */
export { PostgresJobOutbox, type PostgresJobOutboxOptions } from './postgres-job-outbox.js';
export {
  inClsTransaction,
  inPgliteTransaction,
  inPgTransaction,
  inTypeOrmTransaction,
  type OutboxTransactionExecutor,
  type SqlRunner,
} from './sql-executors.js';
export type { OutboxRelayConnection } from './relay-connection.js';
export { DEFAULT_OUTBOX_TABLE, JOB_OUTBOX_MIGRATION, jobOutboxMigration } from './outbox-table.js';
export { JobOutboxStore, type OutboxJob, type OutboxRow } from '../../core/outbox-port/job-outbox-store.js';
export { OutboxTransactionMissingError } from '../../core/outbox-port/outbox-transaction-missing.error.js';
export { OutboxStoreClosedError } from '../../core/outbox-port/outbox-store-closed.error.js';
