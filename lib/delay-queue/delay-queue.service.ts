import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { DelayQueueClosedError } from '../core/errors/delay-queue-closed.error.js';
import { InvalidJobError } from '../core/errors/invalid-job.error.js';
import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { RedisKeySpace, type TopicKeys } from '../core/keys/redis-key-space.js';
import { RedisLockEvents } from '../core/events/redis-lock-events.js';
import { REDIS_LOCK_TRACING, type RedisLockTracing } from '../core/tracing/redis-lock-tracing.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { preloadScripts } from '../core/redis/preload-scripts.js';
import { RedisConnection } from '../core/redis/redis-connection.js';
import { errorMessage } from '../core/errors/error-message.js';
import type { RedisScript } from '../core/redis/redis-script.js';
import { TransactionSynchronizer } from '../core/transaction/transaction-synchronizer.interface.js';
import { AfterCommitWriter } from './after-commit-writer.js';
import { JobOutboxRelay } from './outbox-relay/job-outbox-relay.js';
import type { OutboxRelayStats } from './outbox-relay/outbox-relay-stats.js';
import { OutboxJobWriter } from './outbox-relay/outbox-job-writer.js';
import { pendingRepeatInfo } from './outbox-relay/pending-repeat-info.js';
import { ConsumerRegistry } from './consumer-registry.js';
import { DUE_SCORE_SLOTS, SCHEDULE_BATCH } from './jobs/delay-queue.constants.js';
import type { Consumer, ConsumerOptions } from './interfaces/consumer.interface.js';
import type { DelayedJob, DelayQueueStats } from './interfaces/delayed-job.interface.js';
import type { DelayedJobHandler } from './interfaces/job-context.interface.js';
import type { ScheduledJob, ScheduleOptions } from './interfaces/schedule-options.interface.js';
import { decodeJobLeniently } from './jobs/job-codec.js';
import { newOperationId, operationKey, runRecorded } from './jobs/operation-record.js';
import { describeValue, refuseAsInvalidOption } from '../core/options/option-validation.js';
import { keysOf, refuseUnknownKeys } from '../core/options/known-option-keys.js';
import { prepareJob, type PreparedJob } from './jobs/prepare-job.js';
import { cancelJobScript } from './scripts/cancel-job.lua.js';
import { readDeadLettersScript } from './scripts/read-dead-letters.lua.js';
import { readJobScript } from './scripts/read-job.lua.js';
import { rescheduleJobScript } from './scripts/reschedule-job.lua.js';
import { retryDeadJobsScript } from './scripts/retry-dead-jobs.lua.js';
import { scheduleJobsScript } from './scripts/schedule-jobs.lua.js';
import { topicStatsScript } from './scripts/topic-stats.lua.js';
import { ALL_DELAY_QUEUE_SCRIPTS } from './scripts/all-delay-queue-scripts.js';
import { assertValidTopic } from '../core/keys/topic-name.js';
import { TopicShards } from './jobs/topic-shards.js';
import type { RepeatInfo, RepeatOptions, RepeatSchedule } from './interfaces/repeat-options.interface.js';
import { RepeatScheduler } from './repeat/repeat-scheduler.js';
import { repeatScriptKeys } from './repeat/repeat-keys.js';

/** Dead letters requeued per script call by `retryDead(topic)`. */
const RETRY_DEAD_BATCH = 1000;

/** The keys of `reschedule()`'s `when`. */
const RESCHEDULE_KEYS = keysOf<Pick<ScheduleOptions, 'delay' | 'at'>>()(['delay', 'at']);

/** The keys of `deadLetters()`'s options. */
const DEAD_LETTERS_OPTION_KEYS = keysOf<NonNullable<Parameters<DelayQueueService['deadLetters']>[1]>>()(['limit']);

/** Shortest time shutdown keeps trying to write committed jobs, even with `shutdownTimeout: 0`. */
const AFTER_COMMIT_FLUSH_MIN_MS = 1_000;

/**
 * Delayed jobs on Redis: schedule a JSON payload on a topic to run after a delay or at a time, and
 * consume it with at-least-once delivery, retries with backoff, dead letters, de-duplication by id,
 * cancel and reschedule. Handlers are usually methods marked `@OnDelayed(topic)`; `consume()` is the
 * programmatic twin.
 *
 * Due times use the Redis server clock, so producers and consumers on machines with skewed clocks agree.
 *
 * Inject it anywhere once `RedisLockModule` is imported; Nest builds it (its constructor is internal).
 *
 * @hideconstructor
 *
 * @example
 * import { Injectable } from '@nestjs/common';
 * import { DelayQueueService, OnDelayed, type JobContext } from 'nestjs-redis-lock';
 *
 * \@Injectable()
 * export class OrderExpiry {
 *   constructor(private readonly delayQueue: DelayQueueService) {}
 *
 *   async placed(orderId: string): Promise<void> {
 *     await this.delayQueue.schedule('order.expire', { orderId }, { delay: 15 * 60_000, id: `expire:${orderId}` });
 *   }
 *
 *   async paid(orderId: string): Promise<void> {
 *     await this.delayQueue.cancel('order.expire', `expire:${orderId}`);
 *   }
 *
 *   \@OnDelayed('order.expire')
 *   async expire(payload: { orderId: string }, job: JobContext): Promise<void> {
 *     // runs once the delay has passed, on one instance; retried with backoff if it throws
 *   }
 * }
 */
@Injectable()
export class DelayQueueService implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('DelayQueue');
  private closed = false;
  /** Jobs of committed transactions on their way to Redis (retried until written; see AfterCommitWriter). */
  private readonly afterCommit: AfterCommitWriter;
  /** With `delayQueue.outbox`: jobs scheduled in transactions go through the outbox instead. */
  private readonly outbox?: JobOutboxRelay;

  constructor(
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    private readonly connection: RedisConnection,
    @Inject(TransactionSynchronizer) private readonly transactions: TransactionSynchronizer,
    private readonly events: RedisLockEvents,
    private readonly keySpace: RedisKeySpace,
    private readonly shards: TopicShards,
    @Inject(REDIS_LOCK_TRACING) private readonly tracing: RedisLockTracing,
    private readonly consumers: ConsumerRegistry,
    private readonly repeats: RepeatScheduler,
  ) {
    this.afterCommit = new AfterCommitWriter(
      (topic, jobs, writeId) => this.write(topic, jobs, writeId),
      (topic, jobs) => this.emitScheduled(topic, jobs),
      events,
      this.logger,
    );
    if (config.delayQueue.outbox) {
      this.outbox = new JobOutboxRelay(
        config.delayQueue.outbox,
        new OutboxJobWriter(() => this.connection.client, shards, repeats),
        transactions,
        events,
        new Logger('DelayQueueOutbox'),
        (topic, rows) => this.emitScheduled(topic, rows.map((row) => ({ ...row, id: row.jobId, kind: row.kind === 'delay' ? 'd' : 'a' }))),
      );
    }
  }

  /** Counters of the transactional outbox (`delayQueue.outbox`), or undefined without one. */
  get outboxStats(): OutboxRelayStats | undefined {
    return this.outbox?.stats;
  }

  /**
   * Jobs scheduled inside transactions that committed, not yet confirmed written to Redis (Redis was
   * unreachable; they are being retried). Exported as the `after_commit_writes_pending` metric.
   */
  get pendingScheduleWrites(): number {
    return this.afterCommit.pendingJobs;
  }

  /**
   * Schedules one job and returns its id. Inside an active transaction (see `TransactionSynchronizer`)
   * the job is written after the commit, and dropped on rollback; the id is returned at once. A write
   * after the commit that fails is retried with backoff until Redis takes it, for as long as the
   * process runs (`job.schedule.retrying` events); shutdown keeps trying until
   * `delayQueue.shutdownTimeout`, then reports what is left (`job.schedule.lost`, an error log).
   *
   * Scheduling an `id` that is still waiting, running or dead keeps the existing job and returns the
   * same id (de-duplication), unless `replace: true`.
   *
   * @throws InvalidJobError before anything is written: a payload JSON cannot carry unchanged
   *   (BigInt, circular, functions, Date, Map, NaN…), a negative/NaN/infinite delay, a bad id
   * @throws InvalidTopicError for a topic name that is not allowed
   */
  async schedule<T>(topic: string, payload: T, options?: ScheduleOptions): Promise<string> {
    this.shardKeys(topic); // validates the topic before anything else
    this.assertOpen('schedule a job');
    return this.tracing.traceSchedule(topic, 1, async (traceparent) => {
      const job = prepareJob(topic, payload, options, this.config.delayQueue, '', traceparent);
      await this.enqueue(topic, [job]);
      return job.id;
    });
  }

  /**
   * Schedules many jobs with few round trips; resolves to their ids in order. Every job is validated
   * before any is written; each group of 500 is written atomically (all of a batch inside a transaction
   * after its commit). Jobs due in the same millisecond run in array order.
   */
  async scheduleMany<T>(topic: string, jobs: Array<ScheduledJob<T>>): Promise<string[]> {
    this.shardKeys(topic); // validates the topic before anything else
    this.assertOpen('schedule jobs');
    if (!Array.isArray(jobs)) throw new InvalidJobError(topic, 'jobs', `is ${describeValue(jobs)}; pass an array of { payload, ...options }`);
    return this.tracing.traceSchedule(topic, jobs.length, async (traceparent) => {
      const prepared = jobs.map((job, i) => {
        if (job === null || typeof job !== 'object' || !('payload' in job)) {
          throw new InvalidJobError(topic, `jobs[${i}]`, 'must be an object with a `payload` property');
        }
        const { payload, ...options } = job;
        return prepareJob(topic, payload, options, this.config.delayQueue, `jobs[${i}]`, traceparent);
      });
      if (prepared.length > 0) await this.enqueue(topic, prepared);
      return prepared.map((job) => job.id);
    });
  }

  /**
   * Deletes a job wherever it is: waiting, running or dead. A handler running it is not interrupted
   * at once, but its `job.signal` aborts at its next visibility extension and its result is ignored.
   *
   * @returns whether the job existed
   */
  async cancel(topic: string, id: string): Promise<boolean> {
    this.assertId(topic, id);
    const keys = this.jobKeys(topic, id);
    return (await this.runRecorded<number>(cancelJobScript, keys, [id])) === 1;
  }

  /**
   * Moves a waiting job to a new time. A job already running, dead or unknown is left alone.
   *
   * @returns whether the job was waiting and has been moved
   */
  async reschedule(topic: string, id: string, when: { delay?: number; at?: Date | number }): Promise<boolean> {
    this.assertId(topic, id);
    const keys = this.jobKeys(topic, id);
    if (when === null || typeof when !== 'object') {
      throw new InvalidJobError(topic, 'when', 'must be an object: { delay } or { at }');
    }
    refuseUnknownKeys((field, problem) => {
      throw new InvalidJobError(topic, field, problem);
    }, '', when, RESCHEDULE_KEYS);
    const job = prepareJob(topic, null, { delay: when.delay, at: when.at, id }, this.config.delayQueue);
    return (await this.runRecorded<number>(rescheduleJobScript, keys, [id, job.kind, job.when])) === 1;
  }

  /** The job with this id and where it is, or null if there is none (never scheduled, done, or cancelled). */
  async get<T = unknown>(topic: string, id: string): Promise<DelayedJob<T> | null> {
    this.assertId(topic, id);
    const keys = this.jobKeys(topic, id);
    const [nowMs, body, dueScore, deadline, diedAt] = await readJobScript.run<
      [number, string | null, string | null, string | null, string | null]
    >(this.connection.client, keys, [id]);
    if (body === null) return null;
    const job = decodeJobLeniently<T>(body);
    const base = {
      id,
      topic,
      payload: job.payload,
      attempts: job.attempts,
      maxAttempts: job.maxAttempts,
      createdAt: new Date(job.createdAt),
      lastError: job.lastError,
      lastErrorStack: job.lastErrorStack,
    };
    if (dueScore !== null) {
      const dueMs = Math.floor(Number(dueScore) / DUE_SCORE_SLOTS);
      return { ...base, state: dueMs <= Number(nowMs) ? 'due' : 'scheduled', scheduledAt: new Date(dueMs) };
    }
    if (deadline !== null) return { ...base, state: 'active', visibleUntil: new Date(Number(deadline)) };
    if (diedAt !== null) return { ...base, state: 'dead', diedAt: new Date(Number(diedAt)) };
    return null;
  }

  /**
   * Counts of a topic's jobs by state and of its repeatable schedules, from one snapshot per shard
   * (a sharded topic's shards are added up).
   */
  async stats(topic: string): Promise<DelayQueueStats> {
    assertValidTopic(topic);
    const perShard = await Promise.all(
      // The five topic keys, the unused operation record and the schedules hash (see topic-stats.lua.ts).
      this.shards.all(topic).map((keys) => topicStatsScript.run<number[]>(this.connection.client, repeatScriptKeys(keys).slice(0, 7), [])),
    );
    const total = { scheduled: 0, due: 0, active: 0, dead: 0, schedules: 0 };
    for (const [waiting, due, active, dead, schedules] of perShard) {
      total.scheduled += waiting - due;
      total.due += due;
      total.active += active;
      total.dead += dead;
      total.schedules += schedules;
    }
    return total;
  }

  /** Dead letters, newest first (default 100, at most 10000). */
  async deadLetters<T = unknown>(topic: string, options?: { limit?: number }): Promise<Array<DelayedJob<T>>> {
    const shards = this.shardKeys(topic);
    refuseUnknownKeys(refuseAsInvalidOption, 'deadLetters', options, DEAD_LETTERS_OPTION_KEYS);
    const limit = options?.limit ?? 100;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 10_000) {
      throw new InvalidOptionsError('deadLetters.limit', `got ${describeValue(limit)}; use a whole number from 1 to 10000`);
    }
    // Each shard's newest `limit`, merged: the newest `limit` overall are among them.
    const perShard = await Promise.all(
      shards.map((keys) => readDeadLettersScript.run<(string | number)[]>(this.connection.client, keys, [limit])),
    );
    const result: Array<DelayedJob<T> & { diedAt: Date }> = [];
    for (const flat of perShard) for (let i = 0; i < flat.length; i += 3) {
      const job = decodeJobLeniently<T>(String(flat[i + 1]));
      result.push({
        id: String(flat[i]),
        topic,
        payload: job.payload,
        state: 'dead',
        attempts: job.attempts,
        maxAttempts: job.maxAttempts,
        createdAt: new Date(job.createdAt),
        diedAt: new Date(Number(flat[i + 2])),
        lastError: job.lastError,
        lastErrorStack: job.lastErrorStack,
      });
    }
    if (perShard.length === 1) return result;
    return result.sort((x, y) => y.diedAt.getTime() - x.diedAt.getTime()).slice(0, limit);
  }

  /**
   * Puts dead letters back in the queue, due now, with their attempts reset: one by id, or all of
   * the topic's. Resolves to how many were requeued.
   */
  async retryDead(topic: string, id?: string): Promise<number> {
    const shards = this.shardKeys(topic);
    if (id !== undefined) {
      this.assertId(topic, id);
      return this.runRecorded<number>(retryDeadJobsScript, this.jobKeys(topic, id), [id, 1]);
    }
    const counts = await Promise.all(shards.map((keys) => this.retryAllDead(keys)));
    return counts.reduce((sum, n) => sum + n, 0);
  }

  /** Requeues every dead letter of one shard. */
  private async retryAllDead(keys: string[]): Promise<number> {
    // Bounded by what is dead now, so jobs that die again meanwhile are not chased forever.
    let remaining = Number((await topicStatsScript.run<number[]>(this.connection.client, keys, []))[3]);
    let total = 0;
    while (remaining > 0) {
      const moved = await this.runRecorded<number>(retryDeadJobsScript, keys, ['', Math.min(remaining, RETRY_DEAD_BATCH)]);
      total += moved;
      if (moved === 0) break;
      remaining -= moved;
    }
    return total;
  }

  /**
   * Runs a job on `topic` at every tick of `schedule`, each tick exactly once across all instances:
   * the tick's job (id `repeat:<id>@<tick ms>`) is enqueued once by a compare-and-set in Redis, and
   * runs with the queue's at-least-once delivery (retries, dead letters, visibility). Tick times come
   * from the Redis server clock. An upsert by `options.id` (default: the topic): calling it again
   * with the same definition, as every instance does at start, changes nothing; another definition
   * replaces the stored one (its waiting tick is dropped; the next tick follows the new schedule).
   * Some consumer of the topic (`@OnDelayed` or `consume()`) must run somewhere for ticks to run.
   *
   * Missed ticks after downtime follow `catchUp` (default `'latest'`: one run for the most recent
   * missed tick). The schedule survives restarts: it lives in Redis until `removeRepeat`.
   *
   * Inside a transaction with `delayQueue.outbox`, the schedule is written to the outbox in that
   * transaction and upserted in Redis after COMMIT (never on ROLLBACK; see docs/outbox.md); Redis is
   * not read, so the result is the definition with `nextRunAt` estimated from the calendar and the
   * local clock (the stored schedule may keep an earlier tick, and has no `lastRunAt`). Without an
   * outbox it is upserted at once, transaction or not.
   *
   * @returns the stored schedule and the tick queued now
   * @throws InvalidOptionsError for a bad schedule or option (named in the message)
   *
   * @example
   * await delayQueue.repeat('report.daily', { cron: '0 2 * * *', timeZone: 'Europe/Warsaw' });
   * await delayQueue.repeat('cache.refresh', { every: 30_000 }, { id: 'eu', payload: { region: 'eu' } });
   */
  async repeat<T>(topic: string, schedule: RepeatSchedule, options?: RepeatOptions<T>): Promise<RepeatInfo> {
    this.shardKeys(topic); // validates the topic before anything else
    this.assertOpen('repeat a job');
    const definition = this.repeats.prepare(topic, schedule, options);
    if (this.outbox && this.transactions.isActive()) {
      await this.outbox.insertScheduleChange(topic, definition.id, definition);
      return pendingRepeatInfo(topic, definition);
    }
    return this.repeats.upsert(topic, definition);
  }

  /**
   * Deletes the schedule `id` (default: the topic) and its waiting tick job; a tick already running
   * finishes, and no further tick is enqueued. Inside a transaction with `delayQueue.outbox`, the
   * removal goes through the outbox like `repeat()` (applied after COMMIT, never on ROLLBACK) and
   * resolves to `true` at once: whether the schedule existed is known only when it is applied.
   *
   * @returns whether the schedule existed
   */
  async removeRepeat(topic: string, id?: string): Promise<boolean> {
    this.shardKeys(topic);
    const scheduleId = id ?? topic;
    this.assertId(topic, scheduleId);
    if (this.outbox && this.transactions.isActive()) {
      await this.outbox.insertScheduleChange(topic, scheduleId, undefined);
      return true;
    }
    return this.repeats.remove(topic, scheduleId);
  }

  /** The repeatable schedules of `topic`, by next tick (at most 1000 per shard). */
  async listRepeats(topic: string): Promise<RepeatInfo[]> {
    this.shardKeys(topic);
    return this.repeats.list(topic);
  }

  /**
   * Starts a consumer of `topic` in this process; the programmatic twin of `@OnDelayed`. The handler
   * resolves to acknowledge, or throws to be retried with backoff (dead letter after `maxAttempts`).
   * The consumer is drained when the application shuts down, or earlier with `consumer.close()`.
   *
   * @throws DuplicateDelayedHandlerError when the topic already has a consumer in this application
   * @throws InvalidOptionsError for an option out of range (named in the message)
   *
   * @example
   * const consumer = delayQueue.consume<{ orderId: string }>('order.expire', async ({ orderId }, job) => {
   *   await orders.expire(orderId, { signal: job.signal });
   * }, { concurrency: 8 });
   */
  consume<T>(topic: string, handler: DelayedJobHandler<T>, options?: ConsumerOptions): Consumer {
    return this.consumers.start(topic, handler, options, `consume(${JSON.stringify(topic)})`, 'consume');
  }

  /**
   * Loads the delay-queue scripts into Redis's cache up front. An optimisation only, so it neither
   * delays bootstrap nor fails it (with Redis down it finishes, or fails quietly, in the background).
   */
  async onApplicationBootstrap(): Promise<void> {
    await this.outbox?.start();
    void preloadScripts(this.connection.client, ALL_DELAY_QUEUE_SCRIPTS).catch((error: unknown) =>
      this.logger.debug(`Script preload skipped: ${errorMessage(error)}`),
    );
  }

  /**
   * Drains every consumer, then flushes the writes of committed transactions still pending, before
   * the module's connections close (in `onApplicationShutdown`). Consumers drain first (the
   * `@OnDelayed` ones, then those of `consume()`), so that jobs their handlers schedule in
   * transactions while they finish are flushed too.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.consumers.drain('on-delayed');
    await this.consumers.drain('all');
    await this.afterCommit.flush(Math.max(AFTER_COMMIT_FLUSH_MIN_MS, this.config.delayQueue.shutdownTimeout));
    await this.outbox?.stop();
  }

  /**
   * Nest lifecycle hook: after the drain, stops the consumers and refuses further calls (`DelayQueueClosedError`).
   */
  onApplicationShutdown(): void {
    this.closed = true;
    this.consumers.close();
    this.afterCommit.close();
  }

  private async enqueue(topic: string, jobs: PreparedJob[]): Promise<void> {
    if (!this.transactions.isActive()) {
      // A replace run twice (a re-sent command) must not replace again: it gets an operation record.
      await this.write(topic, jobs, jobs.some((job) => job.replace) ? newOperationId() : undefined);
      this.emitScheduled(topic, jobs);
      return;
    }
    if (this.outbox) return this.outbox.insert(topic, jobs);
    this.transactions.register({
      afterCompletion: async (status) => {
        if (status === 'committed') await this.afterCommit.write(topic, jobs);
      },
    });
  }

  /**
   * Writes each job to its shard: one group per shard, so no script call spans two slots. With a
   * `writeId`, each script call gets an operation record named after it, the same on every retry.
   */
  private async write(topic: string, jobs: readonly PreparedJob[], writeId?: string): Promise<void> {
    const shards = this.shardKeys(topic);
    if (shards.length === 1) return this.writeToShard(shards[0], jobs, writeId);
    const groups = new Map<number, PreparedJob[]>();
    for (const job of jobs) {
      const index = this.shards.indexOf(topic, job.id);
      let group = groups.get(index);
      if (!group) groups.set(index, (group = []));
      group.push(job);
    }
    await Promise.all([...groups].map(([index, group]) => this.writeToShard(shards[index], group, writeId)));
  }

  private async writeToShard(keys: string[], jobs: readonly PreparedJob[], writeId?: string): Promise<void> {
    const batches: Promise<unknown>[] = [];
    const records: string[] = [];
    for (let start = 0; start < jobs.length; start += SCHEDULE_BATCH) {
      const args: (string | number)[] = [];
      for (const job of jobs.slice(start, start + SCHEDULE_BATCH)) {
        args.push(job.id, job.kind, job.when, job.replace ? '1' : '0', job.tail);
      }
      let batchKeys = keys;
      if (writeId !== undefined) {
        const record = operationKey(keys[1], `write:${writeId}:${start}`);
        records.push(record);
        batchKeys = [...keys, record];
      }
      // Sent together: ioredis pipelines them on the one connection, in order.
      batches.push(scheduleJobsScript.run(this.connection.client, batchKeys, args));
    }
    await Promise.all(batches);
    if (records.length > 0) await this.dropRecords(records);
  }

  /**
   * Runs a script with a fresh operation record (see operation-record.ts), so that a re-sent call
   * answers as the first run did; the record is dropped once the reply is here (no re-send can follow).
   */
  private runRecorded<T>(script: RedisScript, keys: string[], args: (string | number)[]): Promise<T> {
    return runRecorded<T>(this.connection.client, script, keys, args);
  }

  /** Deletes operation records whose call has been answered; one that cannot be deleted expires on its own. */
  private async dropRecords(records: string[]): Promise<void> {
    await this.connection.client.del(...records).catch(() => undefined);
  }

  private emitScheduled(topic: string, jobs: ReadonlyArray<Pick<PreparedJob, 'id' | 'kind' | 'when' | 'replace'>>): void {
    if (!this.events.wants('job.scheduled')) return;
    for (const job of jobs) {
      const when = job.kind === 'd' ? { delayMs: job.when } : { at: job.when };
      this.events.emit('job.scheduled', { topic, id: job.id, ...when, replace: job.replace });
    }
  }

  /** The script keys of every shard of `topic` (one entry for a topic that is not sharded). Validates the name. */
  private shardKeys(topic: string): string[][] {
    assertValidTopic(topic);
    return this.shards.all(topic).map(scriptKeys);
  }

  /** The script keys of the shard that holds job `id`. */
  private jobKeys(topic: string, id: string): string[] {
    return this.shardKeys(topic)[this.shards.indexOf(topic, id)];
  }

  private assertId(topic: string, id: unknown): void {
    if (typeof id !== 'string' || id.length === 0) {
      throw new InvalidJobError(topic, 'id', `is ${describeValue(id)}; use the non-empty string schedule() returned`);
    }
  }

  private assertOpen(action: string): void {
    if (this.closed) throw new DelayQueueClosedError(action);
  }
}

function scriptKeys(keys: TopicKeys): string[] {
  return [keys.due, keys.jobs, keys.active, keys.dead, keys.marker];
}
