import type { Logger } from '@nestjs/common';
import { errorMessage } from '../../core/errors/error-message.js';
import type { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import type { JobOutboxStore, OutboxRow } from '../../core/outbox-port/job-outbox-store.js';
import type { WriteOutcome } from '../writer/job-writer.js';
import { isJobRow, type OutboxJobWrite, type OutboxJobWriter, type OutboxWrite } from './outbox-job-writer.js';
import { isRefusal } from './outbox-row-checks.js';
import { groupByTopic } from './outbox-rows.js';
import type { RowClaimDeadlines } from './row-claim-deadlines.js';

/** A row Redis refuses (an error reply, not a connection failure) this many times is parked. */
const MAX_REFUSED_ATTEMPTS = 10;

/** Which path relays: right after its transaction's COMMIT, or the background relay (rows left behind). */
export type RelaySource = 'after-commit' | 'relay';

/** Reports jobs written, with what each write did (the queue's `job.scheduled` events). */
export type WrittenJobs = (topic: string, rows: ReadonlyArray<OutboxJobWrite & { readonly status?: WriteOutcome }>) => void;

/**
 * The step both relay paths end with: writes rows to Redis under their row claim, deletes the rows
 * written, gives back (or parks, after MAX_REFUSED_ATTEMPTS refusals) the others. Every write goes
 * through `OutboxJobWriter`, whose per-row operation record makes a row written twice one job.
 */
export class OutboxRowRelay {
  readonly counts = { relayed: 0, relayedLeftBehind: 0, parked: 0 };

  constructor(
    private readonly store: JobOutboxStore,
    private readonly writer: OutboxJobWriter,
    private readonly deadlines: RowClaimDeadlines,
    private readonly events: RedisLockEvents,
    private readonly logger: Logger,
    private readonly written: WrittenJobs,
  ) {}

  /**
   * Writes rows and deletes those written. Rows Redis refused stay (released for the next look
   * when they were claimed); throws the first failure so that the caller backs off.
   */
  async relay(
    rows: readonly OutboxWrite[],
    source: RelaySource,
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
      const jobRows = outcomes
        .filter((o) => o.error === undefined && isJobRow(o.row))
        .map((o) => ({ ...(o.row as OutboxJobWrite), status: o.status }));
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

  /** Marks a row that cannot be relayed (unreadable, or refused by Redis too often): kept in the table, never retried. */
  async park(row: Pick<OutboxRow, 'rowId' | 'topic' | 'jobId'>, reason: string): Promise<void> {
    await this.store.park(row.rowId, reason);
    this.counts.parked++;
    this.logger.error(
      `Outbox row ${row.rowId} (topic ${JSON.stringify(row.topic)}, job ${JSON.stringify(row.jobId)}) parked: ${reason}. ` +
        'It stays in the outbox table, marked parked; it will not be retried.',
    );
    this.events.emitIfWanted('outbox.row.parked', () => ({ rowId: row.rowId, topic: String(row.topic), jobId: String(row.jobId), reason }));
  }
}
