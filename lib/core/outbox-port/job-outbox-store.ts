import type { OutboxRowKind } from './outbox-row-kind.js';

/**
 * A job (or a repeat schedule change, see `OutboxRowKind`) on its way to Redis through the
 * transactional outbox, as the delay queue hands it to `JobOutboxStore.insert`: checked and encoded
 * already, with its id fixed, so that every relay of the row writes the same job.
 */
export interface OutboxJob {
  /** The row's own id (unique per scheduled job, even when two transactions schedule the same job id). */
  readonly rowId: string;
  /** The job's topic. */
  readonly topic: string;
  /** The job id `schedule()` returned (the schedule's id for a repeat schedule change). */
  readonly jobId: string;
  /** What the row carries, and so what `when` is. */
  readonly kind: OutboxRowKind;
  /**
   * `'delay'`: a delay in ms, counted from the insert on the database's clock (in a claimed
   * `OutboxRow`: the delay left, `due_at - now()` computed by the database at the claim, negative
   * when the row is overdue: the job is written as due that long ago, so it runs at once and keeps
   * its place by due time among its group's jobs, never at its delay after the relay; a store that
   * returns 0 instead loses that order); `'at'`: the absolute due time in epoch ms (the job's `at`);
   * 0 for a repeat schedule change.
   */
  readonly when: number;
  /** True when scheduled with `replace: true` (an existing job of the same id is replaced, not kept). */
  readonly replace: boolean;
  /** The encoded job body (retry options, trace context, payload JSON); opaque to the store. */
  readonly body: string;
}

/** A row claimed by a relay: its job as inserted (`when` measured at the claim, see `OutboxJob.when`). */
export interface OutboxRow extends OutboxJob {
  /** Relays that claimed the row before this one and did not finish it (crashed, or Redis failed). */
  readonly attempts: number;
}

/**
 * Where the delay queue keeps jobs scheduled inside a database transaction until they are in Redis.
 * Interface and injection token share the name (like `TransactionSynchronizer`). The PostgreSQL
 * implementation is `PostgresJobOutbox` (`nestjs-redis-lock/outbox/postgres`); implement it to use
 * another database.
 *
 * The contract: `insert` runs in the caller's current transaction, so a row exists if and only if
 * that transaction commits. Everything else runs outside any application transaction, on the
 * store's own connection, and may run in several processes at once: `claimBatch` must not hand the
 * same row to two relays while its row claim lasts (`FOR UPDATE SKIP LOCKED` and a claim deadline
 * per row), and a row whose claim deadline passed (its relay crashed) must be claimable again. A
 * repeat schedule's change (`'repeat'`, `'removeRepeat'`) is handed out only when no older change of
 * that schedule is pending, except together with it in one call (then oldest first): the relays
 * apply one schedule's changes in the order they were made.
 */
export interface JobOutboxStore {
  /**
   * Inserts the jobs in the current transaction of the calling async context. Resolves when the
   * insert has run (nothing to wait for after COMMIT).
   *
   * @throws OutboxTransactionMissingError when no transaction of the store's executor is active in
   *   the calling context, so a job cannot be written outside the transaction it belongs to
   */
  insert(jobs: readonly OutboxJob[]): Promise<void>;

  /**
   * Whether the calling async context is inside a transaction the store would insert into.
   * Optional: with it, a `schedule()` made in such a transaction while the transaction port sees
   * none is refused (`OutboxTransactionMissingError`) instead of written to Redis before COMMIT.
   */
  inTransaction?(): boolean;

  /**
   * Claims up to `limit` rows inserted at least `minAgeMs` ago (rows younger than that are normally
   * being relayed by the process that committed them), oldest first, for `claimMs`: no other relay
   * gets them until their claim deadline (now + `claimMs`) passes or they are deleted or parked.
   */
  claimBatch(limit: number, options: { minAgeMs: number; claimMs: number }): Promise<OutboxRow[]>;

  /**
   * Claims the given rows, right after the COMMIT that made them visible, for `claimMs`; resolves to
   * the ids that exist (a row inserted in a savepoint that was rolled back does not, and its job must
   * not be written) and that no other relay holds before its claim deadline (its write may be in flight:
   * the row is left to it). Optional: without it the committing process writes every row it
   * inserted, with a deadline of `minAge` from the insert (after which any relay may claim them).
   */
  claimRows?(rowIds: readonly string[], options: { claimMs: number }): Promise<string[]>;

  /** Ends the row claim of rows whose write failed (Redis unreachable), so that the next look retries them. */
  release(rowIds: readonly string[]): Promise<void>;

  /** Deletes rows whose jobs are in Redis. Unknown ids are ignored. */
  delete(rowIds: readonly string[]): Promise<void>;

  /** Moves a row that can never be relayed aside (kept for inspection, never claimed again), with the reason. */
  park(rowId: string, reason: string): Promise<void>;

  /**
   * Claims the pending changes of repeat schedule `jobId` of `topic` (its `'repeat'` and
   * `'removeRepeat'` rows that are not parked, also those another relay holds: a write of theirs that
   * failed is then not retried) for `claimMs`, outside any transaction; resolves to their ids. A `removeRepeat()` made
   * outside a transaction supersedes them: it claims them so no relay applies one meanwhile, then
   * deletes them once the removal is done (or releases them when it failed). Without it such a row
   * left behind (its process killed between its write and its DELETE) is relayed again after Redis
   * lost its data, and the schedule comes back. Optional.
   */
  claimScheduleChanges?(topic: string, jobId: string, options: { claimMs: number }): Promise<string[]>;

  /** Rows waiting to be relayed (parked rows not counted). Optional; used for metrics. */
  countPending?(): Promise<number>;

  /**
   * Calls `onInsert` soon after a transaction that inserted rows commits, in any process (PostgreSQL:
   * LISTEN/NOTIFY). Optional: without it the relay polls. Resolves to a function that stops listening.
   */
  listen?(onInsert: () => void): Promise<() => Promise<void>>;

  /**
   * Called once at bootstrap, in the module's `onModuleInit`, before any lease, leadership or job is
   * taken: checks that the database answers (and may apply a development migration). A rejection
   * fails bootstrap; one that is not a `RedisLockError` is wrapped in `OutboxUnavailableError`.
   */
  start?(): Promise<void>;

  /** Called once at shutdown, after the last relay; releases the store's own connections. */
  close?(): Promise<void>;
}

/** Injection token of the configured `JobOutboxStore` (same name as the interface). */
export const JobOutboxStore = Symbol.for('nestjs-redis-lock:JobOutboxStore');
