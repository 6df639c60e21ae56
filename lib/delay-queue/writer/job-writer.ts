import { Injectable } from '@nestjs/common';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import { RedisConnection } from '../../core/connection/redis-connection.js';
import {
  outcomeOf,
  writtenIdOf,
  type ArgValues,
  type JobScript,
  type JobWritten,
  type ScriptArgType,
  type WriteOutcome,
} from '../scripts/job-script.js';
import { scheduleJobsScript } from '../scripts/schedule-jobs.lua.js';
import { writeOutboxJobScript } from '../scripts/write-outbox-job.lua.js';
import { SCHEDULE_BATCH, SCHEDULE_WINDOW } from '../jobs/delay-queue.constants.js';
import { newOperationId, operationKey } from '../jobs/operation-record.js';
import { dueKindArg, type PreparedJob } from '../jobs/prepare-job.js';
import { routingOfTail } from '../jobs/job-codec.js';
import { dedupeKeyOf } from '../jobs/dedupe-spec.js';
import { TopicShards } from '../jobs/topic-shards.js';
import { WriteFenceExpiredError } from '../../core/errors/write-fence-expired.error.js';
import type { WriteFence } from '../jobs/write-fence.js';
import { AnsweredRecords } from './answered-records.js';

export type { JobWritten, WriteOutcome } from '../scripts/job-script.js';

/** The operation id of the record slot of a schedule call that asks for no record: never read nor written. */
const NO_RECORD = 'unused';

/** A job as it is written: what `prepareJob` checked and encoded, without the size it reports. */
type JobToWrite = Pick<PreparedJob, 'id' | 'kind' | 'when' | 'replace' | 'tail' | 'dedupe'>;

/**
 * What places a job on a shard of a sharded topic: its group, else its dedupe key (every call with
 * one key reaches the one script that decides it), else its id (TopicShards.indexOf).
 */
function shardingOf(tail: string): string | undefined {
  const { group, dedupe } = routingOfTail(tail);
  return group ?? (dedupe === undefined ? undefined : dedupeKeyOf(dedupe));
}

/**
 * The one way jobs and commands on jobs reach a topic's keys in Redis: every call goes to the shard
 * that holds its job, and carries an operation record where a second run of it (a re-sent command,
 * a retried write) must answer as the first and change nothing (see operation-record.ts). Used by
 * `DelayQueueService`, the after-commit writer and the outbox relay alike.
 */
@Injectable()
export class JobWriter {
  private readonly answered: AnsweredRecords;

  constructor(
    private readonly connection: RedisConnection,
    private readonly shards: TopicShards,
    private readonly events: RedisLockEvents,
  ) {
    this.answered = new AnsweredRecords(connection);
  }

  /**
   * Writes each job to its shard: one group per shard, so no script call spans two slots, in script
   * calls of at most SCHEDULE_BATCH jobs. With a `writeId`, each script call gets an operation record
   * named after it, the same on every retry of the write. Resolves to what the script did with each
   * job, in the order of `jobs` (see `JobWritten`); only a write with a `writeId` answers the same
   * when its call ran twice. The records are deleted only once every shard answered: a write retried
   * after one shard failed finds the records of the shards that had answered, which answer as before.
   */
  async write(topic: string, jobs: readonly JobToWrite[], writeId?: string): Promise<JobWritten[]> {
    const shards = this.shards.all(topic);
    const records: Array<[jobsKey: string, records: string[]]> = [];
    const outcomes = await this.writeToShards(topic, shards, jobs, writeId, records);
    for (const [jobsKey, answered] of records) this.answered.drop(jobsKey, answered);
    return outcomes;
  }

  private async writeToShards(
    topic: string,
    shards: readonly TopicKeys[],
    jobs: readonly JobToWrite[],
    writeId: string | undefined,
    records: Array<[string, string[]]>,
  ): Promise<JobWritten[]> {
    if (shards.length === 1) return this.writeToShard(shards[0], jobs, writeId, records);
    const groups = new Map<number, { jobs: JobToWrite[]; positions: number[] }>();
    jobs.forEach((job, position) => {
      const index = this.shards.indexOf(topic, job.id, shardingOf(job.tail));
      let group = groups.get(index);
      if (!group) groups.set(index, (group = { jobs: [], positions: [] }));
      group.jobs.push(job);
      group.positions.push(position);
    });
    const outcomes = new Array<JobWritten>(jobs.length);
    await Promise.all(
      [...groups].map(async ([index, group]) => {
        const written = await this.writeToShard(shards[index], group.jobs, writeId, records);
        group.positions.forEach((position, i) => (outcomes[position] = written[i]));
      }),
    );
    return outcomes;
  }

  /**
   * Writes one job under a fence (see write-fence.ts): its record `fence.recordId` is checked and
   * set by the same script as the write, which changes nothing once the Redis server's clock has
   * passed `fence.deadline`. The record is kept (the outbox shortens it once the row is deleted).
   *
   * @throws WriteFenceExpiredError when the write reached Redis after its deadline
   */
  async writeFenced(topic: string, job: JobToWrite, fence: WriteFence): Promise<WriteOutcome> {
    const keys = this.shards.forJob(topic, job.id, shardingOf(job.tail));
    const dedupe = job.dedupe ?? routingOfTail(job.tail).dedupe ?? '';
    const outcome = await writeOutboxJobScript.call(
      this.connection,
      { ...keys, record: operationKey(keys.jobs, fence.recordId) },
      { id: job.id, kind: dueKindArg(job.kind), when: job.when, replace: job.replace, tail: job.tail, deadline: fence.deadline, dedupe },
    );
    if (outcome === 'late') throw new WriteFenceExpiredError();
    // Written before (the row relayed twice): no new job, as for an id that exists.
    return outcome === 'written-before' ? 'existing' : outcome;
  }

  /**
   * Runs `script` on a shard's keys with a fresh operation record as its `record` key, so that a
   * re-sent run answers as the first; the record is deleted once the reply is here (no re-send can
   * follow: see AnsweredRecords). Resolves to the script's decoded reply.
   */
  async runRecorded<K extends keyof TopicKeys | 'record', A extends Record<string, ScriptArgType>, F extends string, R>(
    script: JobScript<K, A, F, R>,
    keys: TopicKeys,
    args: ArgValues<A>,
  ): Promise<R> {
    const record = operationKey(keys.jobs, newOperationId());
    const recorded: TopicKeys & { readonly record: string } = { ...keys, record };
    const reply = await script.call(this.connection, recorded, args);
    this.answered.drop(keys.jobs, [record]);
    return reply;
  }

  /** Sends the deletes of answered operation records still pending (at shutdown, before the connections close). */
  sendAnsweredRecords(): void {
    this.answered.sendNow();
  }

  /** `publish`, or `spublish` on a cluster: how a script announces on a topic's channel. */
  get publishCommand(): 'publish' | 'spublish' {
    return this.connection.publishCommand;
  }

  /**
   * Reports jobs written: one `job.scheduled` event each, with what the write did (`outcomes[i]` for
   * `jobs[i]`, or the job's own `status`) when that is known, under the id of the job concerned.
   */
  reportScheduled(
    topic: string,
    jobs: ReadonlyArray<Pick<JobToWrite, 'id' | 'kind' | 'when' | 'replace'> & { readonly status?: WriteOutcome }>,
    outcomes?: readonly JobWritten[],
  ): void {
    if (!this.events.wants('job.scheduled')) return;
    jobs.forEach((job, i) => {
      // An outbox row relayed after its due time is written with a negative delay (it keeps its due time): reported as 0.
      const when = job.kind === 'delay' ? { delayMs: Math.max(0, job.when) } : { at: job.when };
      const written = outcomes?.[i];
      const status = written === undefined ? job.status : outcomeOf(written);
      const id = written === undefined ? job.id : writtenIdOf(written, job.id);
      this.events.emit('job.scheduled', { topic, id, ...when, replace: job.replace, ...(status === undefined ? {} : { status }) });
    });
  }

  /** Writes one shard's jobs; the records its calls used are added to `records` (deleted by `write` once every shard answered). */
  private async writeToShard(
    keys: TopicKeys,
    jobs: readonly JobToWrite[],
    writeId: string | undefined,
    records: Array<[string, string[]]>,
  ): Promise<JobWritten[]> {
    const batchCount = Math.ceil(jobs.length / SCHEDULE_BATCH);
    const outcomes = new Array<JobWritten[]>(batchCount);
    const shardRecords: string[] = [];
    let next = 0;
    let failed = false;
    // At most SCHEDULE_WINDOW batches on the connection at once, sent in order: Redis always has the
    // next one queued, and a command sent meanwhile on the same connection (a consumer's claim of
    // the first jobs, a lock) waits behind that many batches, not behind the whole call.
    const sendBatches = async () => {
      while (!failed && next < batchCount) {
        const batch = next++;
        const start = batch * SCHEDULE_BATCH;
        const writes = jobs.slice(start, start + SCHEDULE_BATCH).map((job) => ({
          id: job.id,
          kind: dueKindArg(job.kind),
          when: job.when,
          replace: job.replace ? '1' : '0',
          tail: job.tail,
          dedupe: job.dedupe ?? '',
        }));
        const record = operationKey(keys.jobs, writeId === undefined ? NO_RECORD : `write:${writeId}:${start}`);
        if (writeId !== undefined) shardRecords.push(record);
        try {
          const recorded = writeId !== undefined;
          outcomes[batch] = await scheduleJobsScript.call(this.connection, { ...keys, record }, { recorded }, writes);
        } catch (error) {
          failed = true;
          throw error;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(SCHEDULE_WINDOW, batchCount) }, sendBatches));
    // Deleted by write() once every batch of every shard answered: a failed write is retried with the same records.
    records.push([keys.jobs, shardRecords]);
    return outcomes.flat();
  }
}
