/**
 * `nestjs-redis-lock/outbox/postgres`: the transactional outbox on PostgreSQL. A job scheduled inside a
 * database transaction is written to an outbox table in that transaction and relayed to Redis after it
 * commits, even if the process dies right after COMMIT; nothing is enqueued on ROLLBACK.
 *
 * Set-up: a `PostgresJobOutbox` with the executor of your stack (`inPgTransaction` for `pg` and PGlite,
 * `inTypeOrmTransaction`, `inClsTransaction`) and the table from `jobOutboxMigration()`.
 * `OutboxTransactionExecutor` is for adapters: an executor of your own for another stack.
 *
 * @module nestjs-redis-lock/outbox/postgres
 */
export { PostgresJobOutbox, type PostgresJobOutboxOptions } from './postgres-job-outbox.js';
export {
  inClsTransaction,
  inPgTransaction,
  inTypeOrmTransaction,
  type EntityManagerLike,
  type OutboxTransactionExecutor,
  type QueryableWithRows,
  type TransactionHostLike,
} from './sql-executors.js';
export { jobOutboxMigration } from './outbox-table.js';
