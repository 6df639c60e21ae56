import type { Logger } from '@nestjs/common';
import { errorMessage } from '../../core/errors/error-message.js';
import type { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import type { JobOutboxStore, OutboxJob, OutboxRow } from '../../core/outbox-port/job-outbox-store.js';
import { OutboxStoreClosedError } from '../../core/outbox-port/outbox-store-closed.error.js';
import { OutboxTransactionMissingError } from '../../core/outbox-port/outbox-transaction-missing.error.js';
import { OutboxUnavailableError } from '../../core/outbox-port/outbox-unavailable.error.js';
import { RedisLockError } from '../../core/errors/redis-lock.error.js';
import type { RedisOutageLog } from '../../core/redis/outage-log.js';
import type { OutboxConfig } from '../../core/options/redis-lock-config.js';
import { backoffDelay } from '../../core/options/retry-backoff.js';
import { settleWithin } from '../../core/time/settle-within.js';
import type { TransactionSynchronizer } from '../../core/transaction/transaction-synchronizer.interface.js';
import type { PreparedJob } from '../jobs/prepare-job.js';
import type { RepeatDefinition } from '../repeat/repeat-definition.js';
import type { WriteOutcome } from '../writer/job-writer.js';
import { isJobRow, isScheduleRow, type OutboxJobWrite, type OutboxJobWriter, type OutboxWrite } from './outbox-job-writer.js';
import type { OutboxRelayStats } from './outbox-relay-stats.js';
import { isRefusal, readClaimedRow } from './outbox-row-checks.js';
import { groupByTopic, jobRowsOf, scheduleChangeRowOf } from './outbox-rows.js';
import { RelayWakeup } from './relay-wakeup.js';
import { RowClaimDeadlines } from './row-claim-deadlines.js';

/** How long the end of a committed transaction waits for its own jobs' write before leaving it to run on. */
const AFTER_COMMIT_WAIT_MS = 2_000;
/** Backoff of the relay's looks after failures (Redis or the database unreachable). */
const FAILURE_BACKOFF = { delay: 200, factor: 2, maxDelay: 5_000, jitter: 0.3 } as const;
/** A row Redis refuses (an error reply, not a connection failure) this many times is parked. */
const MAX_REFUSED_ATTEMPTS = 10;
/** Longest time shutdown waits for writes started right after COMMIT. */
const STOP_WAIT_MS = 5_000;

/**
 * The transactional outbox, delay-queue side. Inside a transaction, `insert` puts the jobs into the
 * `JobOutboxStore` in that transaction and registers an after-commit hook that writes them to Redis
 * at once and deletes their rows (the normal path: no wait for a poll). A background relay claims
 * rows older than `minAge` that nobody finished (the committing process crashed, or Redis was down)
 * and writes them, with backoff while Redis or the database fails. Every write goes through
 * `OutboxJobWriter`, whose per-row operation record makes a row written twice one job.
 *
 * Late writes: every write is made under a row claim and refused by Redis past its deadline (see
 * `RowClaimDeadlines`). The after-commit claim does not take rows another relay holds before their
 * claim deadline.
 *
 * Due times: a delayed job's row keeps its due time on the database's clock (`due_at`); a relay
 * writes it with the delay left, `due_at - now()` computed by the database at the claim and
 * negative once overdue, and Redis adds that to its own TIME: the job is due at its committed time
 * (mapped onto the Redis clock by a duration, never by comparing the two clocks), so one relayed late
 * runs at once and keeps its place, by due time, among the jobs of its group that have not started.
 * The after-commit write does the same with the delay minus the monotonic time since the insert.
 */
export class JobOutboxRelay {
  private readonly inFlight = new Set<Promise<void>>();
  private loop?: Promise<void>;
  private stopped = false;
  /** Rows of the current look (reported when it fails). */
  private lastClaimed = 0;
  private readonly wakeup = new RelayWakeup();
  private unlisten?: () => Promise<void>;
  private counts = { relayed: 0, relayedLeftBehind: 0, parked: 0, failureStreak: 0 };
  /** The application closed the store's connection: the relay has stopped, and said so once. */
  private storeClosed = false;
  /**
   * The after-commit application of repeat schedule rows, one transaction after the other in the
   * order their transactions completed (a transaction's hooks start in registration order), so that
   * `repeat()` then `removeRepeat()` in one transaction, or in two consecutive ones, end as called.
   */
  private scheduleTurn: Promise<void> = Promise.resolve();

  private readonly store: JobOutboxStore;
  private readonly deadlines: RowClaimDeadlines;

  constructor(
    private readonly settings: OutboxConfig,
    private readonly writer: OutboxJobWriter,
    private readonly transactions: TransactionSynchronizer,
    private readonly events: RedisLockEvents,
    private readonly logger: Logger,
    /** Reports jobs written, with what each write did (the queue's `job.scheduled` events). */
    private readonly written: (topic: string, rows: ReadonlyArray<OutboxJobWrite & { readonly status?: WriteOutcome }>) => void,
    /** Where failures to reach Redis go during a known outage (counted there, not logged here). */
    private readonly outages?: RedisOutageLog,
  ) {
    this.store = settings.store;
    this.deadlines = new RowClaimDeadlines(writer.clock, settings.claimLease);
  }

  get stats(): OutboxRelayStats {
    return { ...this.counts, inFlight: this.inFlight.size };
  }

  /** Rows waiting in the outbox, if the store can count them. */
  async pendingRows(): Promise<number | undefined> {
    return this.store.countPending?.();
  }

  /**
   * Claims the pending outbox changes of a schedule that a removal outside a transaction supersedes
   * (see JobOutboxStore.claimScheduleChanges); none without that store method.
   */
  async claimScheduleChanges(topic: string, id: string): Promise<string[]> {
    return (await this.store.claimScheduleChanges?.(topic, id, { claimMs: this.settings.claimLease })) ?? [];
  }

  /** Deletes superseded rows claimed by `claimScheduleChanges` (the removal is done). */
  async deleteClaimed(rowIds: readonly string[]): Promise<void> {
    if (rowIds.length > 0) await this.store.delete(rowIds);
  }

  /** Gives back rows claimed by `claimScheduleChanges` (the removal failed): the next look relays them. */
  async releaseClaimed(rowIds: readonly string[]): Promise<void> {
    if (rowIds.length > 0) await this.store.release(rowIds);
  }

  /**
   * Inserts the jobs into the outbox in the current transaction; after COMMIT they are written to
   * Redis from here at once, on ROLLBACK they vanish with the transaction.
   */
  async insert(topic: string, jobs: readonly PreparedJob[]): Promise<void> {
    await this.insertRows(jobRowsOf(topic, jobs));
  }

  /**
   * Called when the transaction port sees no transaction: refuses when the store's executor sees
   * one, since a job written to Redis now would run before that transaction's COMMIT (and survive
   * its ROLLBACK).
   *
   * @throws OutboxTransactionMissingError (`missingFrom: 'transaction port'`)
   */
  refuseUnseenTransaction(): void {
    if (this.store.inTransaction?.()) throw new OutboxTransactionMissingError(this.store.constructor?.name || 'the job outbox store', 'transaction port');
  }

  /**
   * Inserts a repeat schedule's upsert (`definition`) or, with `undefined`, the removal of schedule
   * `id`, into the outbox in the current transaction; after COMMIT it is applied to Redis from here
   * at once (as `repeat()` / `removeRepeat()` do outside a transaction), on ROLLBACK it vanishes.
   */
  async insertScheduleChange(topic: string, id: string, definition: RepeatDefinition | undefined): Promise<void> {
    await this.insertRows([scheduleChangeRowOf(topic, id, definition)]);
  }

  private async insertRows(rows: readonly OutboxJob[]): Promise<void> {
    // A delay counts from the call, as without a transaction: the store's due time starts at the insert.
    const insertedAt = performance.now();
    await this.store.insert(rows);
    const ordered = rows.some(isScheduleRow);
    this.transactions.register({
      afterCompletion: async (status) => {
        if (status !== 'committed') return;
        if (!ordered) return this.relayCommitted(rows, insertedAt);
        const turn = this.scheduleTurn.then(() => this.relayCommitted(rows, insertedAt));
        this.scheduleTurn = turn.catch(() => undefined);
        await turn;
      },
    });
  }

  /**
   * Starts the store: it checks that its database answers (and may apply a development migration).
   * Run in the module's `onModuleInit`, so an outbox that is not ready fails bootstrap before any
   * `onApplicationBootstrap` hook (leader elections, consumers, this relay's loop) takes a lease,
   * leadership or job. A failure that is not a `RedisLockError` is wrapped in `OutboxUnavailableError`.
   */
  async prepare(): Promise<void> {
    try {
      await this.store.start?.();
    } catch (error) {
      if (error instanceof RedisLockError) throw error;
      throw new OutboxUnavailableError(this.store.constructor?.name || 'the job outbox store', undefined, 'its own', error);
    }
  }

  /** Starts the store's listener and the relay loop (after `prepare`). */
  async start(): Promise<void> {
    // The first sample of the Redis clock, so that writes after COMMIT need no round trip for it.
    void this.writer.clock.refresh().catch(() => undefined);
    if (this.store.listen) {
      try {
        this.unlisten = await this.store.listen(() => this.onInsertNotified());
      } catch (error) {
        this.logger.warn(`Outbox: could not listen for commits (${errorMessage(error)}); polling every ${this.settings.pollInterval} ms.`);
      }
    }
    this.loop = this.run();
  }

  /**
   * Stops the relay loop and waits (a bounded time) for writes started after COMMIT; rows not
   * written stay in the outbox for the next relay, in any instance. Then closes the store.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeup.close();
    // A look held up by an unreachable Redis or database does not hold shutdown: its rows stay claimed
    // until their claim deadline, then any relay takes them.
    if (this.loop) await settleWithin(this.loop, STOP_WAIT_MS);
    if (this.inFlight.size > 0) await settleWithin(Promise.all(this.inFlight), STOP_WAIT_MS);
    await this.unlisten?.().catch(() => undefined);
    await this.store.close?.().catch((error: unknown) => this.logger.warn(`Outbox store close failed: ${errorMessage(error)}`));
  }

  private async relayCommitted(rows: readonly OutboxJob[], insertedAt: number): Promise<void> {
    if (this.stopped) {
      this.logger.warn(`Outbox: ${rows.length} row(s) committed after shutdown began; the relay of another instance (or of the next start) writes them.`);
      return;
    }
    let written!: () => void;
    const inRedis = new Promise<void>((resolve) => (written = resolve));
    const task = this.relayOwn(rows, insertedAt, written)
      .catch((error: unknown) => this.reportFailure('after-commit', rows.length, error, 1))
      .finally(written);
    this.inFlight.add(task);
    void task.finally(() => this.inFlight.delete(task));
    // The transaction's caller normally finds its jobs in Redis when it goes on (the rows' DELETE
    // follows in the background); a write held up by an outage keeps going in the background, and
    // the relay takes the rows over after minAge.
    await settleWithin(inRedis, AFTER_COMMIT_WAIT_MS);
  }

  /**
   * Writes the rows this process committed. With a store that can claim them first, only rows that
   * exist are written (a savepoint rolled back inside the committed transaction took its rows with
   * it), and no other relay takes them meanwhile.
   */
  private async relayOwn(rows: readonly OutboxJob[], insertedAt: number, written: () => void): Promise<void> {
    await this.writer.clock.ready();
    let claimed: Map<string, OutboxRow> | undefined;
    let deadline: number;
    if (this.store.claimRows) {
      const claimSentAt = performance.now();
      const existing = new Set(await this.store.claimRows(rows.map((row) => row.rowId), { claimMs: this.settings.claimLease }));
      deadline = this.deadlines.deadlineOf(claimSentAt);
      rows = rows.filter((row) => existing.has(row.rowId));
      claimed = new Map(rows.map((row) => [row.rowId, { ...row, attempts: 0 }]));
    } else {
      // Unclaimed: another relay may take the rows once they are minAge old (counted from the insert).
      deadline = this.deadlines.deadlineOf(insertedAt, Math.min(this.settings.minAge, this.deadlines.windowMs));
    }
    // What is left of each delay, negative once it has passed (a long transaction, a slow commit): the
    // job keeps its due time, counted from the insert, and with it its place among its group's jobs.
    const elapsed = performance.now() - insertedAt;
    const writes = rows.map((row) => (row.kind === 'delay' ? { ...row, when: Math.ceil(row.when - elapsed) } : row));
    if (writes.length > 0) await this.relay(writes, 'after-commit', deadline, claimed, written);
  }

  /**
   * Writes rows and deletes those written. Rows Redis refused stay (released for the next look
   * when they were claimed); throws the first failure so that the caller backs off.
   */
  private async relay(
    rows: readonly OutboxWrite[],
    source: 'after-commit' | 'relay',
    /** The write deadline of the row claim the rows are held under (ms of the Redis server's clock). */
    deadline: number,
    claimed?: ReadonlyMap<string, OutboxRow>,
    /** Called once the Redis writes are answered, before the DELETE. */
    written?: () => void,
  ): Promise<void> {
    const started = performance.now();
    const outcomes = await this.writer.write(rows, deadline);
    written?.();
    const done = outcomes.filter((o) => o.error === undefined).map((o) => o.row);
    const failed = outcomes.filter((o) => o.error !== undefined);
    if (done.length > 0) {
      try {
        await this.store.delete(done.map((row) => row.rowId));
      } catch (error) {
        // Written but not deleted: the rows are relayed again later, which their operation records make a no-op.
        if (claimed) await this.store.release(done.map((row) => row.rowId)).catch(() => undefined);
        throw error;
      }
      // A write of these rows by another relay may still be in flight: its deadline ends within the window.
      void this.writer.keepRecords(done, this.deadlines.recordKeepMs);
      this.counts.relayed += done.length;
      if (source === 'relay') this.counts.relayedLeftBehind += done.length;
      const jobRows = outcomes.filter((o) => o.error === undefined && isJobRow(o.row)).map((o) => ({ ...(o.row as OutboxJobWrite), status: o.status }));
      for (const [topic, group] of groupByTopic(jobRows)) this.written(topic, group);
      this.events.emitIfWanted('outbox.relayed', () => ({ source, rows: done.length, durationMs: performance.now() - started }));
    }
    if (failed.length === 0) return;
    const retry: string[] = [];
    for (const { row, error } of failed) {
      const attempts = claimed?.get(row.rowId)?.attempts ?? 0;
      if (isRefusal(error) && attempts + 1 >= MAX_REFUSED_ATTEMPTS) {
        await this.park(row, `Redis refused the write ${attempts + 1} times: ${errorMessage(error)}`);
      } else {
        retry.push(row.rowId);
      }
    }
    if (claimed && retry.length > 0) await this.store.release(retry);
    if (retry.length > 0) throw failed[0].error;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let claimed = 0;
      try {
        claimed = await this.relayLeftBehind();
        this.counts.failureStreak = 0;
      } catch (error) {
        if (error instanceof OutboxStoreClosedError) {
          this.onStoreClosed(error);
          return;
        }
        this.counts.failureStreak++;
        this.reportFailure('relay', this.lastClaimed, error, this.counts.failureStreak);
      }
      if (this.stopped) break;
      if (this.counts.failureStreak === 0 && claimed === this.settings.batchSize) continue; // more backlog
      await this.wakeup.sleep(this.counts.failureStreak > 0 ? this.backoff(this.counts.failureStreak) : this.settings.pollInterval);
    }
  }

  /** One look: claims a batch of rows left behind, parks the ones that cannot be relayed, writes the rest. */
  private async relayLeftBehind(): Promise<number> {
    this.lastClaimed = 0;
    // No claim while Redis cannot give the clock's first sample: nothing could be written anyway.
    await this.writer.clock.ready();
    const claimSentAt = performance.now();
    const rows = await this.store.claimBatch(this.settings.batchSize, { minAgeMs: this.settings.minAge, claimMs: this.settings.claimLease });
    const deadline = this.deadlines.deadlineOf(claimSentAt);
    this.lastClaimed = rows.length;
    if (rows.length === 0) return 0;
    const valid: OutboxRow[] = [];
    for (const claimed of rows) {
      const read = readClaimedRow(claimed);
      if ('problem' in read) await this.park(claimed, read.problem);
      else valid.push(read.row);
    }
    if (valid.length > 0) await this.relay(valid, 'relay', deadline, new Map(valid.map((row) => [row.rowId, row])));
    return rows.length;
  }

  private async park(row: Pick<OutboxRow, 'rowId' | 'topic' | 'jobId'>, reason: string): Promise<void> {
    await this.store.park(row.rowId, reason);
    this.counts.parked++;
    this.logger.error(
      `Outbox row ${row.rowId} (topic ${JSON.stringify(row.topic)}, job ${JSON.stringify(row.jobId)}) parked: ${reason}. ` +
        'It stays in the outbox table, marked parked; it will not be retried.',
    );
    this.events.emitIfWanted('outbox.row.parked', () => ({ rowId: row.rowId, topic: String(row.topic), jobId: String(row.jobId), reason }));
  }

  /**
   * The application closed the store's connection (its own `pool.end()` in `onModuleDestroy` runs
   * before this module's shutdown): nothing more can be relayed from here, and that is no failure.
   */
  private onStoreClosed(error: OutboxStoreClosedError): void {
    if (this.storeClosed) return;
    this.storeClosed = true;
    this.logger.log(`${error.message} Rows still in the outbox are relayed by another instance, or at the next start.`);
    void this.unlisten?.().catch(() => undefined);
    this.unlisten = undefined;
  }

  private reportFailure(source: 'after-commit' | 'relay', rows: number, error: unknown, attempt: number): void {
    if (error instanceof OutboxStoreClosedError) {
      this.onStoreClosed(error);
      if (source === 'after-commit') this.logger.warn(`Outbox: ${rows} committed job(s) stay in the outbox table: ${error.message}`);
      return;
    }
    const retryInMs = source === 'relay' ? this.backoff(attempt) : this.settings.minAge;
    const message = errorMessage(error);
    this.events.emitIfWanted('outbox.relay.failed', () => ({ source, rows, attempt, retryInMs, error: message }));
    const what = source === 'after-commit' ? 'outbox rows left to the relay' : 'outbox relay looks retried';
    // During a known Redis outage the outage log counts them; otherwise attempts 1, 2, 4, 8, … are
    // logged, so a failing database does not flood the log.
    if (this.outages?.absorb(what, error)) {
      // Counted.
    } else if ((attempt & (attempt - 1)) === 0) {
      this.logger.error(
        source === 'after-commit'
          ? `Outbox: could not finish relaying ${rows} committed job(s) right after COMMIT (${message}); their rows stay in the outbox and the relay retries them.`
          : `Outbox relay: look failed (attempt ${attempt}): ${message}. Retrying in ${retryInMs} ms; committed jobs stay in the outbox meanwhile.`,
      );
    }
    if (source === 'after-commit') this.wakeup.wakeAfter(this.settings.minAge);
  }

  private backoff(failures: number): number {
    return Math.max(1, backoffDelay(FAILURE_BACKOFF, failures));
  }

  /** Rows committed elsewhere are relayed by their own process; look after minAge in case it did not. */
  private onInsertNotified(): void {
    this.wakeup.wakeAfter(this.settings.minAge + 50);
  }
}
