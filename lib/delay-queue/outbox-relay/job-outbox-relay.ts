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
import { AfterCommitRelay } from './after-commit-relay.js';
import type { OutboxJobWriter } from './outbox-job-writer.js';
import type { OutboxRelayStats } from './outbox-relay-stats.js';
import { readClaimedRow } from './outbox-row-checks.js';
import { OutboxRowRelay, type RelaySource, type WrittenJobs } from './outbox-row-relay.js';
import { jobRowsOf, scheduleChangeRowOf } from './outbox-rows.js';
import { RelayWakeup } from './relay-wakeup.js';
import { RowClaimDeadlines } from './row-claim-deadlines.js';

/** Backoff of the relay's looks after failures (Redis or the database unreachable). */
const FAILURE_BACKOFF = { delay: 200, factor: 2, maxDelay: 5_000, jitter: 0.3 } as const;
/** Longest time shutdown waits for writes started right after COMMIT. */
const STOP_WAIT_MS = 5_000;

/**
 * The transactional outbox, delay-queue side. Inside a transaction, `insert` puts the jobs into the
 * `JobOutboxStore` in that transaction and registers their write after COMMIT (AfterCommitRelay: the
 * normal path, no wait for a poll). A background relay, here, claims rows older than `minAge` that
 * nobody finished (the committing process crashed, or Redis was down) and writes them, with backoff
 * while Redis or the database fails. Both paths end in OutboxRowRelay (write, delete, park).
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
  private loop?: Promise<void>;
  private stopped = false;
  /** Rows of the current look (reported when it fails). */
  private lastClaimed = 0;
  private readonly wakeup = new RelayWakeup();
  private unlisten?: () => Promise<void>;
  private failureStreak = 0;
  /** The application closed the store's connection: the relay has stopped, and said so once. */
  private storeClosed = false;

  private readonly store: JobOutboxStore;
  private readonly deadlines: RowClaimDeadlines;
  private readonly rows: OutboxRowRelay;
  private readonly afterCommit: AfterCommitRelay;

  constructor(
    private readonly settings: OutboxConfig,
    private readonly writer: OutboxJobWriter,
    transactions: TransactionSynchronizer,
    private readonly events: RedisLockEvents,
    private readonly logger: Logger,
    written: WrittenJobs,
    /** Where failures to reach Redis go during a known outage (counted there, not logged here). */
    private readonly outages?: RedisOutageLog,
  ) {
    this.store = settings.store;
    this.deadlines = new RowClaimDeadlines(writer.clock, settings.claimLease);
    this.rows = new OutboxRowRelay(this.store, writer, this.deadlines, events, logger, written);
    this.afterCommit = new AfterCommitRelay(settings, writer, this.deadlines, this.rows, transactions, logger, (rows, error) =>
      this.reportFailure('after-commit', rows, error, 1),
    );
  }

  get stats(): OutboxRelayStats {
    return { ...this.rows.counts, failureStreak: this.failureStreak, inFlight: this.afterCommit.pending };
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
    if (this.store.inTransaction?.())
      throw new OutboxTransactionMissingError(this.store.constructor?.name || 'the job outbox store', 'transaction port');
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
    this.afterCommit.afterCommit(rows, insertedAt);
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
    await this.afterCommit.stop(STOP_WAIT_MS);
    await this.unlisten?.().catch(() => undefined);
    await this.store.close?.().catch((error: unknown) => this.logger.warn(`Outbox store close failed: ${errorMessage(error)}`));
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let claimed = 0;
      try {
        claimed = await this.relayLeftBehind();
        this.failureStreak = 0;
      } catch (error) {
        if (error instanceof OutboxStoreClosedError) {
          this.onStoreClosed(error);
          return;
        }
        this.failureStreak++;
        this.reportFailure('relay', this.lastClaimed, error, this.failureStreak);
      }
      if (this.stopped) break;
      if (this.failureStreak === 0 && claimed === this.settings.batchSize) continue; // more backlog
      await this.wakeup.sleep(this.failureStreak > 0 ? this.backoff(this.failureStreak) : this.settings.pollInterval);
    }
  }

  /** One look: claims a batch of rows left behind, parks the ones that cannot be relayed, writes the rest. */
  private async relayLeftBehind(): Promise<number> {
    this.lastClaimed = 0;
    // No claim while Redis cannot give the clock's first sample: nothing could be written anyway.
    await this.writer.clock.ready();
    const claimSentAt = performance.now();
    const rows = await this.store.claimBatch(this.settings.batchSize, {
      minAgeMs: this.settings.minAge,
      claimMs: this.settings.claimLease,
    });
    const deadline = this.deadlines.deadlineOf(claimSentAt);
    this.lastClaimed = rows.length;
    if (rows.length === 0) return 0;
    const valid: OutboxRow[] = [];
    for (const claimed of rows) {
      const read = readClaimedRow(claimed);
      if ('problem' in read) await this.rows.park(claimed, read.problem);
      else valid.push(read.row);
    }
    if (valid.length > 0) await this.rows.relay(valid, 'relay', deadline, new Map(valid.map((row) => [row.rowId, row])));
    return rows.length;
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

  private reportFailure(source: RelaySource, rows: number, error: unknown, attempt: number): void {
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
          ? `Outbox: could not finish relaying ${rows} committed job(s) right after COMMIT (${message}); their ` +
              `rows stay in the outbox and the relay retries them.`
          : `Outbox relay: look failed (attempt ${attempt}): ${message}. Retrying in ${retryInMs} ms; committed ` +
              `jobs stay in the outbox meanwhile.`,
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
