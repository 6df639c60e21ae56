import { Logger } from '@nestjs/common';
import { errorMessage } from '../../core/errors/error-message.js';
import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import type { JobOutboxStore, OutboxJob, OutboxRow } from '../../core/outbox-port/job-outbox-store.js';
import { outboxRowKindCode, outboxRowKindOf, type OutboxRowKind } from '../../core/outbox-port/outbox-row-kind.js';
import { OutboxStoreClosedError } from '../../core/outbox-port/outbox-store-closed.error.js';
import { OutboxTransactionMissingError } from '../../core/outbox-port/outbox-transaction-missing.error.js';
import { OutboxUnavailableError } from '../../core/outbox-port/outbox-unavailable.error.js';
import { jobOutboxMigration, outboxTable, type OutboxTable } from './outbox-table.js';
import { relaySqlOf, type RelaySql } from './relay-connection.js';
import type { OutboxTransactionExecutor } from './sql-executors.js';

/** Options of `PostgresJobOutbox`. */
export interface PostgresJobOutboxOptions {
  /**
   * How to run SQL in the caller's current transaction: `inPgTransaction` (`pg`, PGlite),
   * `inTypeOrmTransaction`, `inClsTransaction`, or `{ description, current() }` of your own.
   */
  transaction: OutboxTransactionExecutor;
  /**
   * The relay's own connection, used outside application transactions: a `pg` `Pool` (recommended;
   * LISTEN/NOTIFY on a connection of its own), a `pg` `Client`, a PGlite database, or a TypeORM
   * `DataSource` (polls; each statement on a fresh query runner, never in a transaction of yours).
   */
  relay: object;
  /** The outbox table, `table` or `schema.table` (lower-case identifiers). Default `redis_lock_job_outbox`. */
  table?: string;
  /**
   * Creates the table at bootstrap (`jobOutboxMigration(table)`, idempotent). For development and
   * tests only; in production run the migration yourself. Default false.
   */
  applyMigrationAtStart?: boolean;
  /**
   * NOTIFY the relays of every instance when a transaction with jobs commits (part of the insert
   * statement, delivered by PostgreSQL at COMMIT), so a crashed instance's rows are picked up
   * `outboxRelay.minAge` after its commit instead of at the next poll. Default true.
   */
  notify?: boolean;
}

/**
 * A `JobOutboxStore` on PostgreSQL (and PGlite): the outbox rows are inserted by the caller's own
 * transaction, through `options.transaction`, so they commit or roll back with the caller's data;
 * relays claim rows left behind with `FOR UPDATE SKIP LOCKED` and a claim deadline per row, in single
 * statements on `options.relay`. Due times are kept on the database's clock.
 *
 * @example
 * import { PostgresJobOutbox, inPgTransaction } from 'nestjs-redis-lock/outbox/postgres';
 *
 * RedisLockModule.forRootAsync({
 *   inject: [Pool, TxClients],
 *   useFactory: (pool: Pool, tx: TxClients) => ({
 *     delayQueue: { outbox: new PostgresJobOutbox({ transaction: inPgTransaction(() => tx.current()), relay: pool }) },
 *   }),
 * })
 */
export class PostgresJobOutbox implements JobOutboxStore {
  private readonly table: OutboxTable;
  private readonly relaySql: RelaySql;
  private readonly executor: OutboxTransactionExecutor;
  private readonly applyMigration: boolean;
  private readonly notify: boolean;
  private readonly logger = new Logger('PostgresJobOutbox');
  private readonly sql: ReturnType<typeof statements>;

  constructor(options: PostgresJobOutboxOptions) {
    if (options === null || typeof options !== 'object') {
      throw new InvalidOptionsError(
        'PostgresJobOutbox options',
        'expected { transaction, relay, table?, applyMigrationAtStart?, notify? }',
      );
    }
    const executor = options.transaction as Partial<OutboxTransactionExecutor> | undefined;
    if (!executor || typeof executor.current !== 'function') {
      throw new InvalidOptionsError(
        'PostgresJobOutbox.transaction',
        'expected an executor that runs SQL in the current transaction: inPgTransaction(() => client or PGlite tx), ' +
          'inTypeOrmTransaction(() => manager) or inClsTransaction(transactionHost)',
      );
    }
    const relaySql = options.relay && typeof options.relay === 'object' ? relaySqlOf(options.relay) : undefined;
    if (!relaySql) {
      throw new InvalidOptionsError(
        'PostgresJobOutbox.relay',
        'expected a connection for the relay: a pg Pool or Client, a PGlite database or a TypeORM DataSource',
      );
    }
    for (const flag of ['applyMigrationAtStart', 'notify'] as const) {
      if (options[flag] !== undefined && typeof options[flag] !== 'boolean') {
        throw new InvalidOptionsError(`PostgresJobOutbox.${flag}`, `got ${JSON.stringify(options[flag])}; use true or false`);
      }
    }
    this.table = outboxTable('PostgresJobOutbox.table', options.table);
    this.executor = {
      description: executor.description ?? 'the outbox transaction executor',
      current: executor.current.bind(executor),
      inTransaction: typeof executor.inTransaction === 'function' ? executor.inTransaction.bind(executor) : undefined,
    };
    this.relaySql = relaySql;
    this.applyMigration = options.applyMigrationAtStart === true;
    this.notify = options.notify !== false;
    this.sql = statements(this.table);
  }

  /** The table's DDL, for a migration of your own (the same as `jobOutboxMigration(table)`). */
  get migration(): string {
    return jobOutboxMigration(this.table.qualified);
  }

  /**
   * Checks at bootstrap that the database answers on the relay connection (one `SELECT 1`, at most
   * `READY_TIMEOUT_MS` for a database reached over the network), then applies the development migration if asked. An unreachable database
   * fails bootstrap with `OutboxUnavailableError` (the driver's error as its cause), before the module
   * takes any lease, leadership or job. A TypeORM DataSource not initialized yet is not checked.
   */
  async start(): Promise<void> {
    if (this.relaySql.canRun()) {
      try {
        const answered = this.relaySql.run('SELECT 1', []);
        // An in-process database (PGlite: no address) cannot be out of reach; its first answer waits for its own start.
        await (this.relaySql.address() === undefined ? answered : answerWithin(answered, READY_TIMEOUT_MS));
      } catch (error) {
        throw new OutboxUnavailableError(
          `PostgresJobOutbox, table ${this.table.qualified}`,
          this.relaySql.address(),
          this.relaySql.description,
          error,
        );
      }
    }
    if (this.applyMigration) {
      this.logger.warn(
        `applyMigrationAtStart: creating ${this.table.qualified} if missing (development only; run the migration yourself in production).`,
      );
      await this.relaySql.exec(this.migration);
    }
  }

  inTransaction(): boolean {
    return this.executor.inTransaction?.() ?? false;
  }

  async insert(jobs: readonly OutboxJob[]): Promise<void> {
    if (jobs.length === 0) return;
    const run = this.executor.current();
    if (!run) throw new OutboxTransactionMissingError(this.executor.description);
    const column = <T>(pick: (job: OutboxJob) => T) => jobs.map(pick);
    await run(this.notify ? this.sql.insertAndNotify : this.sql.insert, [
      column((j) => j.rowId),
      column((j) => j.topic),
      column((j) => j.jobId),
      // The column holds storage codes: every release reads them.
      column((j) => outboxRowKindCode(j.kind)),
      // Schedule changes are due at once: a delay of 0 ('at' is the only absolute kind).
      column((j) => (j.kind === 'at' ? null : String(j.when))),
      column((j) => (j.kind === 'at' ? String(j.when) : null)),
      column((j) => j.replace),
      column((j) => j.body),
    ]);
  }

  async claimBatch(limit: number, options: { minAgeMs: number; claimMs: number }): Promise<OutboxRow[]> {
    const rows = await this.runRelay(this.sql.claim, [limit, options.minAgeMs, options.claimMs]);
    return rows.map((row) => ({
      rowId: String(row.id),
      topic: row.topic as string,
      jobId: row.job_id as string,
      // A value that names no kind is passed on as stored: the relay parks the row, naming it.
      kind: outboxRowKindOf(row.kind) ?? (row.kind as OutboxRowKind),
      when: whenOf(outboxRowKindOf(row.kind), row),
      replace: row.replace === true,
      body: String(row.body),
      attempts: Number(row.attempts),
    }));
  }

  async claimRows(rowIds: readonly string[], options: { claimMs: number }): Promise<string[]> {
    if (rowIds.length === 0) return [];
    const rows = await this.runRelay(this.sql.claimRows, [[...rowIds], options.claimMs]);
    return rows.map((row) => String(row.id));
  }

  async release(rowIds: readonly string[]): Promise<void> {
    if (rowIds.length > 0) await this.runRelay(this.sql.release, [[...rowIds]]);
  }

  async delete(rowIds: readonly string[]): Promise<void> {
    if (rowIds.length > 0) await this.runRelay(this.sql.delete, [[...rowIds]]);
  }

  async park(rowId: string, reason: string): Promise<void> {
    await this.runRelay(this.sql.park, [rowId, reason]);
  }

  async claimScheduleChanges(topic: string, jobId: string, options: { claimMs: number }): Promise<string[]> {
    const rows = await this.runRelay(this.sql.claimScheduleChanges, [topic, jobId, options.claimMs]);
    return rows.map((row) => String(row.id));
  }

  async countPending(): Promise<number> {
    const [row] = await this.runRelay(this.sql.countPending, []);
    return Number(row?.count ?? 0);
  }

  /**
   * Runs a relay statement; once the application has closed the relay connection (e.g. `pool.end()`
   * in its own `onModuleDestroy`), fails with OutboxStoreClosedError instead of the driver's error.
   */
  private async runRelay(sql: string, params: readonly unknown[]): Promise<Array<Record<string, unknown>>> {
    if (this.relaySql.closed()) throw new OutboxStoreClosedError(this.relaySql.description);
    try {
      return await this.relaySql.run(sql, params);
    } catch (error) {
      if (this.relaySql.closed()) throw new OutboxStoreClosedError(this.relaySql.description);
      throw error;
    }
  }

  async listen(onInsert: () => void): Promise<() => Promise<void>> {
    if (!this.notify || !this.relaySql.listen) return async () => undefined;
    return this.relaySql.listen(this.table.channel, onInsert, (error) =>
      this.logger.warn(`LISTEN connection failed (${errorMessage(error)}); the relay goes on polling.`),
    );
  }
}

/**
 * A claimed row's `when` (see OutboxJob.when): the absolute ms of an `'at'` job, 0 for a schedule
 * change (due at its insert, which it is past by the claim), else the signed delay left.
 */
function whenOf(kind: OutboxRowKind | undefined, row: Record<string, unknown>): number {
  if (kind === 'at') return Number(row.at_ms);
  if (kind === 'repeat' || kind === 'removeRepeat') return 0;
  return Number(row.remaining_ms);
}

/**
 * Longest wait at bootstrap for the database's first answer (ms): pg waits for a connection without
 * a bound by default (`connectionTimeoutMillis` 0), and a host that drops packets must not hold the
 * application's start forever.
 */
const READY_TIMEOUT_MS = 10_000;

/** Settles like `promise`, or rejects with "no answer within `ms` ms" if it has not settled by then. */
async function answerWithin<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Every statement, built once from the validated table name (never from other input). */
function statements(table: OutboxTable) {
  const t = table.qualified;
  /**
   * A row that changes a repeat schedule ('r' upsert, 'x' removal) is handed out only when no older
   * change of the same schedule is still pending (not parked, and not among `handedTogether`, rows
   * the caller applies in order itself): the changes of one schedule are applied one after the
   * other in the order they were made, however many relays run.
   */
  const noOlderScheduleChange = (row: string, handedTogether?: string) => `(${row}.kind NOT IN ('r', 'x') OR NOT EXISTS (
    SELECT 1 FROM ${t} AS older
    WHERE older.topic = ${row}.topic AND older.job_id = ${row}.job_id AND older.kind IN ('r', 'x')
      AND older.parked_at IS NULL AND (older.created_at, older.id) < (${row}.created_at, ${row}.id)${
        handedTogether
          ? `
      AND older.id <> ALL(${handedTogether})`
          : ''
      }))`;
  const insert = `INSERT INTO ${t} (id, topic, job_id, kind, due_at, at_ms, replace, body)
SELECT id, topic, job_id, kind,
       CASE WHEN kind = 'a' THEN to_timestamp(at_ms / 1000.0) ELSE clock_timestamp() + delay_ms * interval '1 millisecond' END,
       at_ms, replace, body
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::boolean[], $8::text[])
  AS j(id, topic, job_id, kind, delay_ms, at_ms, replace, body)`;
  return {
    insert,
    // NOTIFY inside the transaction is delivered at COMMIT only; one statement, one round trip.
    insertAndNotify:
      `WITH inserted AS (${insert} RETURNING 1) SELECT pg_notify('${table.channel}', '') FROM (SELECT ` + `count(*) FROM inserted) AS n`,
    // Oldest first, as the port says (UPDATE ... RETURNING keeps no order): the relay applies a
    // schedule's changes in the order claimed. remaining_ms is signed: negative for a row claimed
    // after its due time, so the job keeps its committed due time in Redis (its group's order) instead
    // of becoming due at the relay. CEIL: never earlier than due_at.
    claim: `WITH claimed AS (
UPDATE ${t} SET claimed_until = clock_timestamp() + $3 * interval '1 millisecond', attempts = attempts + 1
WHERE id IN (
  SELECT id FROM ${t} AS candidate
  WHERE parked_at IS NULL
    AND created_at <= clock_timestamp() - $2 * interval '1 millisecond'
    AND (claimed_until IS NULL OR claimed_until < clock_timestamp())
    AND ${noOlderScheduleChange('candidate')}
  ORDER BY created_at, id
  LIMIT $1
  FOR UPDATE SKIP LOCKED)
RETURNING id, topic, job_id, kind, at_ms, replace, body, attempts - 1 AS attempts, created_at,
  CEIL(EXTRACT(EPOCH FROM (due_at - clock_timestamp())) * 1000)::bigint AS remaining_ms)
SELECT * FROM claimed ORDER BY created_at, id`,
    // Not a row another relay holds before its claim deadline: its write may be in flight.
    claimRows: `UPDATE ${t} SET claimed_until = clock_timestamp() + $2 * interval '1 millisecond'
WHERE id = ANY($1::text[]) AND parked_at IS NULL AND (claimed_until IS NULL OR claimed_until < clock_timestamp())
  AND ${noOlderScheduleChange(t, '$1::text[]')} RETURNING id`,
    release: `UPDATE ${t} SET claimed_until = NULL WHERE id = ANY($1::text[])`,
    delete: `DELETE FROM ${t} WHERE id = ANY($1::text[])`,
    park: `UPDATE ${t} SET parked_at = clock_timestamp(), claimed_until = NULL, last_error = $2 WHERE id = $1`,
    countPending: `SELECT count(*) AS count FROM ${t} WHERE parked_at IS NULL`,
    claimScheduleChanges: `UPDATE ${t} SET claimed_until = clock_timestamp() + $3 * interval '1 millisecond'
WHERE topic = $1 AND job_id = $2 AND kind IN ('r', 'x') AND parked_at IS NULL RETURNING id`,
  };
}
