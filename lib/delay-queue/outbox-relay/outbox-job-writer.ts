import type { RedisTransport } from '../../core/redis/redis-transport.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { OutboxRow } from '../../core/outbox-port/job-outbox-store.js';
import { operationKey } from '../jobs/operation-record.js';
import type { TopicShards } from '../jobs/topic-shards.js';
import { readStoredForm } from '../repeat/repeat-definition.js';
import type { RepeatScheduler } from '../repeat/repeat-scheduler.js';
import type { JobWriter, WriteOutcome } from '../writer/job-writer.js';
import { RedisClock } from './redis-clock.js';
import type { WriteFence } from '../jobs/write-fence.js';
import { groupOfTail } from '../jobs/job-codec.js';

/** One outbox row's job (or repeat schedule change) as it is written to Redis. */
export type OutboxWrite = Omit<OutboxRow, 'attempts'>;

/** What became of one row's write. */
/** A row's write: its `error`, or for a job row what the write did (`status`). */
type OutboxWriteOutcome = { readonly row: OutboxWrite; readonly error?: unknown; readonly status?: WriteOutcome };

/** A row that carries a job (not a repeat schedule change). */
export type OutboxJobWrite = OutboxWrite & { readonly kind: 'delay' | 'at' };

/** Whether a row changes a repeat schedule (`'repeat'` upsert, `'removeRepeat'`) rather than carrying a job. */
export function isScheduleRow(row: Pick<OutboxWrite, 'kind'>): boolean {
  return row.kind === 'repeat' || row.kind === 'removeRepeat';
}

/** Whether a row carries a job (`'delay'`, `'at'`). */
export function isJobRow(row: OutboxWrite): row is OutboxJobWrite {
  return row.kind === 'delay' || row.kind === 'at';
}

/**
 * Writes outbox rows to Redis, one fenced script call per row (see jobs/write-fence.ts): the operation
 * record `op:outbox:<rowId>` in the job's shard is checked and set by the same script as the
 * change, and the write carries the deadline of the claim it is made under. The record is what
 * makes a row relayed twice one job even after the job has run and been acknowledged (the
 * de-duplication by job id alone only covers a job still waiting, running or dead): a crash between
 * the Redis write and the row's DELETE leaves the row behind, and whichever relay writes it again
 * finds the record and changes nothing. The deadline is what bounds how late a write can land: a
 * write held by a stalled link past it is refused by Redis. Records live OPERATION_RECORD_TTL_MS
 * (10 minutes) from the write, and once the row is deleted `keepRecords` shortens that to the
 * deadline window (any write still in flight has a deadline inside it). The calls of a batch are
 * sent together (pipelined on the one connection).
 *
 * Repeat schedule rows are applied by the `RepeatScheduler`, as `repeat()` / `removeRepeat()` do
 * outside a transaction (an upsert keyed by schedule id and definition fingerprint, a removal by id:
 * both change nothing the second time), one after the other in the rows' order, so that a
 * `repeat()` followed by `removeRepeat()` in one transaction ends removed; their scripts check the
 * same fence: a row applied again after its DELETE failed, or a late copy of its application, does
 * not bring back a schedule that a later transaction removed meanwhile.
 */
export class OutboxJobWriter {
  /** The Redis server's clock as seen from here, for the deadlines of writes. */
  readonly clock: RedisClock;

  constructor(
    private readonly redis: Pick<RedisTransport, 'command'>,
    private readonly shards: TopicShards,
    private readonly repeats: RepeatScheduler,
    private readonly jobs: JobWriter,
  ) {
    this.clock = new RedisClock(redis);
  }

  /**
   * Writes every row under the claim whose write deadline is `deadline` (ms of the Redis server's
   * clock); resolves to each row's outcome (an `error` per row that failed; `WriteFenceExpiredError`
   * for a write that reached Redis too late). Never rejects.
   */
  async write(rows: readonly OutboxWrite[], deadline: number): Promise<OutboxWriteOutcome[]> {
    const scheduleRows = rows.filter(isScheduleRow);
    const [jobs, schedules] = await Promise.all([
      this.writeJobs(rows.filter(isJobRow), deadline),
      this.applySchedules(scheduleRows, deadline),
    ]);
    return [...jobs, ...schedules];
  }

  /** Applies repeat schedule rows in order; a failed one stops the ones after it on the same schedule. */
  private async applySchedules(rows: readonly OutboxWrite[], deadline: number): Promise<OutboxWriteOutcome[]> {
    const outcomes: OutboxWriteOutcome[] = [];
    const failed = new Map<string, unknown>();
    for (const row of rows) {
      const schedule = `${row.topic}\n${row.jobId}`;
      const earlier = failed.get(schedule);
      if (earlier !== undefined) {
        outcomes.push({ row, error: earlier });
        continue;
      }
      try {
        await this.applySchedule(row, { recordId: recordIdOf(row), deadline });
        outcomes.push({ row });
      } catch (error) {
        failed.set(schedule, error);
        outcomes.push({ row, error });
      }
    }
    return outcomes;
  }

  /** Applies one schedule row; the repeat scripts check its fence in the same step as the change. */
  private async applySchedule(row: OutboxWrite, fence: WriteFence): Promise<void> {
    if (row.kind === 'removeRepeat') {
      await this.repeats.remove(row.topic, row.jobId, fence);
    } else {
      const definition = readStoredForm(row.jobId, row.body);
      if (!definition) throw new Error('its repeat definition cannot be read');
      await this.repeats.upsert(row.topic, definition, fence);
    }
  }

  private async writeJobs(rows: readonly OutboxJobWrite[], deadline: number): Promise<OutboxWriteOutcome[]> {
    return Promise.all(
      rows.map(async (row): Promise<OutboxWriteOutcome> => {
        try {
          const job = { id: row.jobId, kind: row.kind, when: row.when, replace: row.replace, tail: row.body };
          const status = await this.jobs.writeFenced(row.topic, job, { recordId: recordIdOf(row), deadline });
          return { row, status };
        } catch (error) {
          return { row, error };
        }
      }),
    );
  }

  /**
   * Shortens the records of rows deleted from the outbox to `keepMs` (best effort: they expire
   * anyway). Not deleted: a write of the row by another relay may still be in flight, and it must
   * find the record until its deadline, which lies within `keepMs` of now.
   */
  async keepRecords(rows: readonly OutboxWrite[], keepMs: number): Promise<void> {
    await Promise.all(
      rows.map((row) => this.redis.command('pexpire', this.recordOf(row, this.keysOf(row)), keepMs).catch(() => undefined)),
    );
  }

  private keysOf(row: OutboxWrite): TopicKeys {
    return isScheduleRow(row)
      ? this.shards.forSchedule(row.topic, row.jobId)
      : this.shards.forJob(row.topic, row.jobId, groupOfTail(row.body));
  }

  private recordOf(row: OutboxWrite, keys: TopicKeys): string {
    return operationKey(keys.jobs, recordIdOf(row));
  }
}

/** The operation id of a row's record. */
function recordIdOf(row: OutboxWrite): string {
  return `outbox:${row.rowId}`;
}
