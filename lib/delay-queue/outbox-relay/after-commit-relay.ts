import type { Logger } from '@nestjs/common';
import type { JobOutboxStore, OutboxJob, OutboxRow } from '../../core/outbox-port/job-outbox-store.js';
import type { OutboxConfig } from '../../core/options/redis-lock-config.js';
import { settleWithin } from '../../core/time/settle-within.js';
import type { TransactionSynchronizer } from '../../core/transaction/transaction-synchronizer.interface.js';
import { isScheduleRow, type OutboxJobWriter } from './outbox-job-writer.js';
import type { OutboxRowRelay } from './outbox-row-relay.js';
import type { RowClaimDeadlines } from './row-claim-deadlines.js';

/** How long the end of a committed transaction waits for its own jobs' write before leaving it to run on. */
const AFTER_COMMIT_WAIT_MS = 2_000;

/**
 * The outbox's normal path: rows inserted in a transaction are written to Redis by the process that
 * committed them, right after COMMIT (no wait for a poll), and their rows deleted. A write held up
 * (Redis down, a slow database) goes on in the background, and the background relay takes the rows
 * over after `minAge`.
 *
 * Due times: the write uses each delay minus the monotonic time since the insert, negative once it
 * has passed (a long transaction, a slow commit): the job keeps its due time, counted from the
 * insert, and with it its place among its group's jobs.
 */
export class AfterCommitRelay {
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;
  /**
   * The after-commit application of repeat schedule rows, one transaction after the other in the
   * order their transactions completed (a transaction's hooks start in registration order), so that
   * `repeat()` then `removeRepeat()` in one transaction, or in two consecutive ones, end as called.
   */
  private scheduleTurn: Promise<void> = Promise.resolve();

  constructor(
    private readonly settings: OutboxConfig,
    private readonly writer: OutboxJobWriter,
    private readonly deadlines: RowClaimDeadlines,
    private readonly rows: OutboxRowRelay,
    private readonly transactions: TransactionSynchronizer,
    private readonly logger: Logger,
    /** A write that failed: its rows stay in the outbox for the background relay. */
    private readonly failed: (rows: number, error: unknown) => void,
  ) {}

  /** Writes not finished yet. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Registers the write of `rows`, inserted in the current transaction at `insertedAt` (monotonic ms), after its COMMIT. */
  afterCommit(rows: readonly OutboxJob[], insertedAt: number): void {
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

  /** Refuses writes from now on and waits up to `waitMs` for those started. */
  async stop(waitMs: number): Promise<void> {
    this.stopped = true;
    if (this.inFlight.size > 0) await settleWithin(Promise.all(this.inFlight), waitMs);
  }

  private async relayCommitted(rows: readonly OutboxJob[], insertedAt: number): Promise<void> {
    if (this.stopped) {
      this.logger.warn(
        `Outbox: ${rows.length} row(s) committed after shutdown began; the relay of another instance (or of the next start) writes them.`,
      );
      return;
    }
    let written!: () => void;
    const inRedis = new Promise<void>((resolve) => (written = resolve));
    const task = this.relayOwn(rows, insertedAt, written)
      .catch((error: unknown) => this.failed(rows.length, error))
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
    const store: JobOutboxStore = this.settings.store;
    let claimed: Map<string, OutboxRow> | undefined;
    let deadline: number;
    if (store.claimRows) {
      const claimSentAt = performance.now();
      const existing = new Set(
        await store.claimRows(
          rows.map((row) => row.rowId),
          { claimMs: this.settings.claimLease },
        ),
      );
      deadline = this.deadlines.deadlineOf(claimSentAt);
      rows = rows.filter((row) => existing.has(row.rowId));
      claimed = new Map(rows.map((row) => [row.rowId, { ...row, attempts: 0 }]));
    } else {
      // Unclaimed: another relay may take the rows once they are minAge old (counted from the insert).
      deadline = this.deadlines.deadlineOf(insertedAt, Math.min(this.settings.minAge, this.deadlines.windowMs));
    }
    const elapsed = performance.now() - insertedAt;
    const writes = rows.map((row) => (row.kind === 'delay' ? { ...row, when: Math.ceil(row.when - elapsed) } : row));
    if (writes.length > 0) await this.rows.relay(writes, 'after-commit', deadline, claimed, written);
  }
}
