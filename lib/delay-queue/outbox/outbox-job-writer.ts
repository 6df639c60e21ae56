import type { RedisClient } from '../../core/options/redis-lock-config.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import { operationKey } from '../jobs/operation-record.js';
import type { TopicShards } from '../jobs/topic-shards.js';
import { scheduleJobsScript } from '../scripts/schedule-jobs.lua.js';

/** One outbox row's job as the schedule script takes it. */
export interface OutboxWrite {
  readonly rowId: string;
  readonly topic: string;
  readonly jobId: string;
  readonly kind: 'd' | 'a';
  readonly when: number;
  readonly replace: boolean;
  readonly body: string;
}

/** What became of one row's write. */
export type OutboxWriteOutcome = { readonly row: OutboxWrite; readonly error?: unknown };

/**
 * Writes outbox rows to Redis through the schedule script, one call per row, each with the
 * operation record `op:outbox:<rowId>` in the job's shard. The record is what makes a row relayed
 * twice one job even after the job has run and been acknowledged (the de-duplication by job id
 * alone only covers a job still waiting, running or dead): a crash between the Redis write and the
 * row's DELETE leaves the row behind, and whichever relay writes it again finds the record and
 * changes nothing. Records are kept until the rows are deleted (`dropRecords`); one left behind
 * expires after OPERATION_RECORD_TTL_MS (10 minutes). The calls of a batch are sent together
 * (pipelined on the one connection).
 */
export class OutboxJobWriter {
  constructor(
    private readonly client: () => RedisClient,
    private readonly shards: TopicShards,
  ) {}

  /** Writes every row; resolves to each row's outcome (an `error` per row that failed). Never rejects. */
  async write(rows: readonly OutboxWrite[]): Promise<OutboxWriteOutcome[]> {
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
    return this.shards.forJob(row.topic, row.jobId);
  }

  private recordOf(row: OutboxWrite, keys: TopicKeys): string {
    return operationKey(keys.jobs, `outbox:${row.rowId}`);
  }
}

function scriptKeys(keys: TopicKeys): string[] {
  return [keys.due, keys.jobs, keys.active, keys.dead, keys.marker];
}
