import type { RedisClient } from '../../core/options/redis-lock-config.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { OutboxRow, OutboxRowKind } from '../../core/outbox/job-outbox-store.js';
import { OPERATION_RECORD_TTL_MS } from '../jobs/delay-queue.constants.js';
import { operationKey } from '../jobs/operation-record.js';
import type { TopicShards } from '../jobs/topic-shards.js';
import { readStoredForm } from '../repeat/repeat-definition.js';
import type { RepeatScheduler } from '../repeat/repeat-scheduler.js';
import { scheduleJobsScript } from '../scripts/schedule-jobs.lua.js';

/** One outbox row's job (or repeat schedule change) as it is written to Redis. */
export type OutboxWrite = Omit<OutboxRow, 'attempts'>;

/** What became of one row's write. */
export type OutboxWriteOutcome = { readonly row: OutboxWrite; readonly error?: unknown };

/** A row that carries a job (not a repeat schedule change). */
export type OutboxJobWrite = OutboxWrite & { readonly kind: 'd' | 'a' };

/** Whether a row changes a repeat schedule (`'r'` upsert, `'x'` removal) rather than carrying a job. */
export function isScheduleRow(row: Pick<OutboxWrite, 'kind'>): boolean {
  return row.kind === 'r' || row.kind === 'x';
}

/** Whether a row carries a job (`'d'`, `'a'`). */
export function isJobRow(row: OutboxWrite): row is OutboxJobWrite {
  return row.kind === 'd' || row.kind === 'a';
}

/**
 * Writes outbox rows to Redis through the schedule script, one call per row, each with the
 * operation record `op:outbox:<rowId>` in the job's shard. The record is what makes a row relayed
 * twice one job even after the job has run and been acknowledged (the de-duplication by job id
 * alone only covers a job still waiting, running or dead): a crash between the Redis write and the
 * row's DELETE leaves the row behind, and whichever relay writes it again finds the record and
 * changes nothing. Records are kept until the rows are deleted (`dropRecords`); one left behind
 * expires after OPERATION_RECORD_TTL_MS (10 minutes). The calls of a batch are sent together
 * (pipelined on the one connection).
 *
 * Repeat schedule rows are applied by the `RepeatScheduler`, as `repeat()` / `removeRepeat()` do
 * outside a transaction (an upsert keyed by schedule id and definition fingerprint, a removal by id:
 * both change nothing the second time), one after the other in the rows' order, so that a
 * `repeat()` followed by `removeRepeat()` in one transaction ends removed. Their operation record is
 * set once the change is applied and checked before applying: a row relayed again after its DELETE
 * failed does not bring back a schedule that a later transaction removed meanwhile.
 */
export class OutboxJobWriter {
  constructor(
    private readonly client: () => RedisClient,
    private readonly shards: TopicShards,
    private readonly repeats: RepeatScheduler,
  ) {}

  /** Writes every row; resolves to each row's outcome (an `error` per row that failed). Never rejects. */
  async write(rows: readonly OutboxWrite[]): Promise<OutboxWriteOutcome[]> {
    const scheduleRows = rows.filter(isScheduleRow);
    const [jobs, schedules] = await Promise.all([this.writeJobs(rows.filter(isJobRow)), this.applySchedules(scheduleRows)]);
    return [...jobs, ...schedules];
  }

  /** Applies repeat schedule rows in order; a failed one stops the ones after it on the same schedule. */
  private async applySchedules(rows: readonly OutboxWrite[]): Promise<OutboxWriteOutcome[]> {
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
        await this.applySchedule(row);
        outcomes.push({ row });
      } catch (error) {
        failed.set(schedule, error);
        outcomes.push({ row, error });
      }
    }
    return outcomes;
  }

  private async applySchedule(row: OutboxWrite): Promise<void> {
    const client = this.client();
    const record = this.recordOf(row, this.keysOf(row));
    if ((await client.exists(record)) === 1) return; // applied already by an earlier relay of this row
    if (row.kind === 'x') {
      await this.repeats.remove(row.topic, row.jobId);
    } else {
      const definition = readStoredForm(row.jobId, row.body);
      if (!definition) throw new Error('its repeat definition cannot be read');
      await this.repeats.upsert(row.topic, definition);
    }
    await client.set(record, '1', 'PX', OPERATION_RECORD_TTL_MS);
  }

  private async writeJobs(rows: readonly OutboxWrite[]): Promise<OutboxWriteOutcome[]> {
    if (rows.length === 0) return [];
    const client = this.client();
    return Promise.all(
      rows.map(async (row): Promise<OutboxWriteOutcome> => {
        try {
          const keys = this.keysOf(row);
          await scheduleJobsScript.run(client, [...scriptKeys(keys), this.recordOf(row, keys)], [
            row.jobId,
            row.kind,
            row.when,
            row.replace ? '1' : '0',
            row.body,
          ]);
          return { row };
        } catch (error) {
          return { row, error };
        }
      }),
    );
  }

  /** Deletes the records of rows that are gone from the outbox (best effort: they expire anyway). */
  async dropRecords(rows: readonly OutboxWrite[]): Promise<void> {
    const client = this.client();
    await Promise.all(rows.map((row) => client.del(this.recordOf(row, this.keysOf(row))).catch(() => undefined)));
  }

  private keysOf(row: OutboxWrite): TopicKeys {
    return isScheduleRow(row) ? this.shards.forSchedule(row.topic, row.jobId) : this.shards.forJob(row.topic, row.jobId);
  }

  private recordOf(row: OutboxWrite, keys: TopicKeys): string {
    return operationKey(keys.jobs, `outbox:${row.rowId}`);
  }
}

function scriptKeys(keys: TopicKeys): string[] {
  return [keys.due, keys.jobs, keys.active, keys.dead, keys.marker];
}
