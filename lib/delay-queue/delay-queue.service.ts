import { Inject, Injectable } from '@nestjs/common';
import { InvalidJobError } from '../core/errors/invalid-job.error.js';
import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { REDIS_LOCK_TRACING, type RedisLockTracing } from '../core/tracing/redis-lock-tracing.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import type { TopicKeys } from '../core/keys/redis-key-space.js';
import { assertValidTopic } from '../core/keys/topic-name.js';
import { describeValue, refuseAsInvalidOption } from '../core/options/option-validation.js';
import { keysOf, refuseUnknownKeys } from '../core/options/known-option-keys.js';
import type { OutboxRelayStats } from './outbox-relay/outbox-relay-stats.js';
import { JobOutboxRelay } from './outbox-relay/job-outbox-relay.js';
import { ScheduleChangeRouter } from './outbox-relay/schedule-change-router.js';
import { ConsumerRegistry } from './consumer-registry.js';
import { JobEnqueuer } from './job-enqueuer.js';
import { TopicInspector } from './topic-inspector.js';
import type { Consumer, ConsumerOptions } from './interfaces/consumer.interface.js';
import type { DelayedJob, DelayedJobState, DelayQueueStats } from './interfaces/delayed-job.interface.js';
import type { DelayedJobHandler } from './interfaces/job-context.interface.js';
import type { ScheduledJob, ScheduleOptions } from './interfaces/schedule-options.interface.js';
import type { ScheduleResult } from './interfaces/schedule-result.interface.js';
import type { RepeatInfo, RepeatOptions, RepeatSchedule } from './interfaces/repeat-options.interface.js';
import type { JobWritten } from './writer/job-writer.js';
import { outcomeOf, writtenIdOf } from './scripts/job-script.js';
import { dueKindArg, prepareJob, preparePayload, type PreparedJob } from './jobs/prepare-job.js';
import { decodeListCursor, encodeListCursor } from './job-list-cursor.js';
import { LISTED_JOB_STATES } from './listed-job.js';
import { TopicShards } from './jobs/topic-shards.js';
import { JobCommands } from './job-commands.js';
import { RepeatScheduler } from './repeat/repeat-scheduler.js';
import { topicName, type NotInferred, type TopicRef } from './typed-topic.js';
import { JobWaiters } from './job-waiters.js';

/** The keys of `reschedule()`'s `when`. */
const RESCHEDULE_KEYS = keysOf<Pick<ScheduleOptions, 'delay' | 'at'>>()(['delay', 'at']);

/** The keys of `list()`'s options. */
const LIST_OPTION_KEYS = keysOf<Parameters<DelayQueueService['list']>[1]>()(['state', 'limit', 'cursor']);

/** `list()`'s page size when none is given, and the largest it takes. */
const LIST_DEFAULT_LIMIT = 100;
const LIST_MAX_LIMIT = 1000;

/** The keys of `obliterate()`'s options. */
const OBLITERATE_OPTION_KEYS = ['force'] as const;

/** The keys of `clean()`'s options. */
const CLEAN_OPTION_KEYS = keysOf<Parameters<DelayQueueService['clean']>[1]>()(['state', 'olderThan', 'limit']);

/** The keys of `waitFor()`'s options. */
const WAIT_FOR_OPTION_KEYS = keysOf<NonNullable<Parameters<DelayQueueService['waitFor']>[2]>>()(['timeout']);

/** The keys of `deadLetters()`'s options. */
const DEAD_LETTERS_OPTION_KEYS = keysOf<NonNullable<Parameters<DelayQueueService['deadLetters']>[1]>>()(['limit']);

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
export class DelayQueueService {
  /** @internal Nest builds it: inject the class instead (its parameters are the module's internal pieces). */
  constructor(
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    private readonly enqueuer: JobEnqueuer,
    private readonly reader: TopicInspector,
    private readonly shards: TopicShards,
    @Inject(REDIS_LOCK_TRACING) private readonly tracing: RedisLockTracing,
    private readonly consumers: ConsumerRegistry,
    private readonly repeats: RepeatScheduler,
    private readonly commands: JobCommands,
    private readonly scheduleChanges: ScheduleChangeRouter,
    @Inject(JobOutboxRelay) private readonly outbox: JobOutboxRelay | null,
    private readonly waiters: JobWaiters,
  ) {}

  /** Counters of the transactional outbox (`delayQueue.outbox`), or undefined without one. */
  get outboxStats(): OutboxRelayStats | undefined {
    return this.outbox?.stats;
  }

  /**
   * Jobs scheduled inside transactions that committed, not yet confirmed written to Redis (Redis was
   * unreachable; they are being retried). Exported as the `after_commit_writes_pending` metric.
   */
  get pendingScheduleWrites(): number {
    return this.enqueuer.pendingAfterCommit;
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
  async schedule<T>(topic: TopicRef<T>, payload: NotInferred<T>, options?: ScheduleOptions): Promise<string> {
    return (await this.scheduleOne(topicName(topic), payload, options, false)).id;
  }

  /**
   * Like `schedule()`, and tells what it did: `'created'`, `'existing'` (a job with this id was
   * waiting, running or dead and was kept), `'replaced'` (with `replace: true`), or `'deferred'`
   * inside a transaction, where the job is written after the commit and the outcome is not known
   * yet. A call re-sent after a lost reply answers as the first. See docs/delayed-jobs.md.
   *
   * @example
   * const { status } = await delayQueue.scheduleWithResult('invoice.send', invoice, { id: `invoice:${invoice.id}` });
   */
  async scheduleWithResult<T>(topic: TopicRef<T>, payload: NotInferred<T>, options?: ScheduleOptions): Promise<ScheduleResult> {
    return this.scheduleOne(topicName(topic), payload, options, true);
  }

  /**
   * Schedules many jobs with few round trips; resolves to their ids in order. Every job is validated
   * before any is written; each group of 500 is written atomically (all of a batch inside a transaction
   * after its commit). Jobs due in the same millisecond run in array order.
   */
  async scheduleMany<T>(topic: TopicRef<T>, jobs: Array<ScheduledJob<NotInferred<T>>>): Promise<string[]> {
    return (await this.scheduleBatch(topicName(topic), jobs, false)).map((job) => job.id);
  }

  /** `scheduleMany()` telling what it did with each job, in order, as `scheduleWithResult()` does. */
  async scheduleManyWithResult<T>(topic: TopicRef<T>, jobs: Array<ScheduledJob<NotInferred<T>>>): Promise<ScheduleResult[]> {
    return this.scheduleBatch(topicName(topic), jobs, true);
  }

  /** `exact`: the caller gets the outcome, so it must be the first run's (see JobEnqueuer.enqueue). */
  private async scheduleOne<T>(topic: string, payload: T, options: ScheduleOptions | undefined, exact: boolean): Promise<ScheduleResult> {
    this.shardKeys(topic); // validates the topic before anything else
    this.enqueuer.assertOpen('schedule a job');
    return this.tracing.traceSchedule(topic, 1, async (traceparent) => {
      const job = prepareJob(topic, payload, options, this.config.delayQueue, '', traceparent);
      return withOutcomes([job], await this.enqueuer.enqueue(topic, [job], exact))[0];
    });
  }

  private async scheduleBatch<T>(topic: string, jobs: Array<ScheduledJob<T>>, exact: boolean): Promise<ScheduleResult[]> {
    this.shardKeys(topic); // validates the topic before anything else
    this.enqueuer.assertOpen('schedule jobs');
    if (!Array.isArray(jobs))
      throw new InvalidJobError(topic, 'jobs', `is ${describeValue(jobs)}; pass an array of { payload, ...options }`);
    return this.tracing.traceSchedule(topic, jobs.length, async (traceparent) => {
      const prepared = jobs.map((job, i) => {
        if (job === null || typeof job !== 'object' || !('payload' in job)) {
          throw new InvalidJobError(topic, `jobs[${i}]`, 'must be an object with a `payload` property');
        }
        const { payload, ...options } = job;
        return prepareJob(topic, payload, options, this.config.delayQueue, `jobs[${i}]`, traceparent);
      });
      if (prepared.length === 0) return [];
      return withOutcomes(prepared, await this.enqueuer.enqueue(topic, prepared, exact));
    });
  }

  /**
   * Deletes a job wherever it is: waiting, running or dead. A running job's handler, on whichever
   * instance, has its `job.signal` aborted with `JobCancelledError` (within a pub/sub round trip, or
   * at its next visibility extension if the notice is lost); the job is not retried nor dead-lettered,
   * whatever the handler does next. See docs/delayed-jobs.md (Cancelling a running job).
   *
   * @returns whether the job existed
   */
  async cancel(topic: TopicRef, id: string): Promise<boolean> {
    const name = topicName(topic);
    this.assertId(name, id);
    this.shardKeys(name);
    return this.commands.cancel(name, id);
  }

  /**
   * Moves a waiting job to a new time. A job already running, dead or unknown is left alone.
   *
   * @returns whether the job was waiting and has been moved
   */
  async reschedule(topic: TopicRef, id: string, when: { delay?: number; at?: Date | number }): Promise<boolean> {
    const name = topicName(topic);
    this.assertId(name, id);
    this.shardKeys(name);
    if (when === null || typeof when !== 'object') {
      throw new InvalidJobError(name, 'when', 'must be an object: { delay } or { at }');
    }
    refuseUnknownKeys(
      (field, problem) => {
        throw new InvalidJobError(name, field, problem);
      },
      '',
      when,
      RESCHEDULE_KEYS,
    );
    const job = prepareJob(name, null, { delay: when.delay, at: when.at, id }, this.config.delayQueue);
    return this.commands.reschedule(name, id, dueKindArg(job.kind), job.when);
  }

  /**
   * Gives a job that is not running a new payload, read by its next run: a job waiting for its time,
   * due, waiting for its group's turn or waiting for a retry. Its attempts, last failure, progress,
   * group and due time stay. A running, dead, kept completed or unknown job is left alone (false): a
   * dead letter keeps the payload it died with (`retryDead` runs it again as it was). Not through the
   * outbox: the change is written to Redis at once, also inside a transaction.
   *
   * @returns whether the job was waiting and now has the new payload
   * @throws InvalidJobError for a payload `schedule()` would refuse (not JSON data, over `delayQueue.maxPayloadBytes`)
   */
  async updatePayload<T>(topic: TopicRef<T>, id: string, payload: NotInferred<T>): Promise<boolean> {
    const name = topicName(topic);
    this.assertId(name, id);
    this.shardKeys(name);
    const { payloadJson } = preparePayload(name, payload, this.config.delayQueue);
    return this.commands.updatePayload(name, id, payloadJson);
  }

  /**
   * One page of a topic's jobs in one state, whole (payloads decoded), and the cursor of the next
   * page, absent after the last. States and their order: `due` (due now, oldest due first),
   * `scheduled` (due later, soonest first), `waiting-group` (waiting for their group's turn, by due
   * time), `active` (running, earliest visibility deadline first), `dead` and `completed` (newest
   * first). Each page costs O(limit) in Redis, whatever the number of jobs (plus the jobs that share
   * the cursor's exact time).
   *
   * Paginating while jobs move: a job that stays in the state with the same time (due time, deadline,
   * time of death or completion) from the first page to the last is listed exactly once; a job that
   * leaves the state is not listed after it left, and a job that enters it, or whose time in it
   * changed (`reschedule`, a running job's visibility extended), is listed at most once at each
   * place it takes, ahead of the cursor (so possibly never, possibly again). A page may hold fewer
   * than `limit` jobs (jobs that left meanwhile) and still return a cursor.
   *
   * @param options.state which jobs
   * @param options.limit jobs per page, 1 to 1000 (default 100)
   * @param options.cursor the `cursor` of the previous page of the same topic and state
   * @throws InvalidOptionsError (`list.state`, `list.limit`, `list.cursor`) for a bad option, before any read
   *
   * @example
   * let cursor: string | undefined;
   * do {
   *   const page = await delayQueue.list('order.expire', { state: 'dead', cursor });
   *   for (const job of page.jobs) console.log(job.id, job.lastError);
   *   cursor = page.cursor;
   * } while (cursor);
   */
  async list<T = unknown>(
    topic: TopicRef<T>,
    options: { state: DelayedJobState; limit?: number; cursor?: string },
  ): Promise<{ jobs: Array<DelayedJob<T>>; cursor?: string }> {
    const name = topicName(topic);
    const shards = this.shardKeys(name);
    if (options === null || typeof options !== 'object') {
      throw new InvalidOptionsError('list', `got ${describeValue(options)}; pass { state, limit?, cursor? }`);
    }
    refuseUnknownKeys(refuseAsInvalidOption, 'list', options, LIST_OPTION_KEYS);
    const { state, limit = LIST_DEFAULT_LIMIT, cursor } = options;
    if (!(LISTED_JOB_STATES as readonly unknown[]).includes(state)) {
      throw new InvalidOptionsError('list.state', `got ${describeValue(state)}; use one of ${LISTED_JOB_STATES.join(', ')}`);
    }
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > LIST_MAX_LIMIT) {
      throw new InvalidOptionsError('list.limit', `got ${describeValue(limit)}; use a whole number from 1 to ${LIST_MAX_LIMIT}`);
    }
    const from = cursor === undefined ? shards.map(() => null) : decodeListCursor(cursor, name, state, shards.length);
    const { jobs, places } = await this.reader.page<T>(name, state, limit, from);
    return places.every((place) => place === 'done') ? { jobs } : { jobs, cursor: encodeListCursor(name, state, places) };
  }

  /**
   * Removes the topic's waiting jobs: scheduled, due, waiting for a retry and waiting for their
   * group's turn, on every shard, in batches of 1,000 (each its own script call). Running jobs stay
   * and finish (their groups' turns are kept); dead letters, kept completed jobs and repeatable
   * schedules stay (a schedule whose queued tick was removed queues its next tick within the periodic
   * check, 5 s). A job scheduled while it runs may be removed or kept.
   *
   * @returns how many jobs it removed
   */
  async drain(topic: TopicRef): Promise<number> {
    const name = topicName(topic);
    this.shardKeys(name);
    return this.commands.drain(name);
  }

  /**
   * Removes dead letters (`state: 'dead'`) or kept completed jobs (`state: 'completed'`) that reached
   * that state more than `olderThan` ms ago (default 0: all of them), oldest first, at most `limit`
   * (default: no limit), in batches of 1,000 (each its own script call). On a sharded topic the
   * shards are cleaned one after the other (oldest first within each).
   *
   * @param options.state `dead` (dead letters) or `completed` (kept completed jobs)
   * @param options.olderThan only those that reached the state more than this many ms ago (Redis clock); default 0
   * @param options.limit at most this many, oldest first; default: no limit
   * @returns how many jobs it removed
   * @throws InvalidOptionsError (`clean.state`, `clean.olderThan`, `clean.limit`) before anything is removed
   */
  async clean(topic: TopicRef, options: { state: 'dead' | 'completed'; olderThan?: number; limit?: number }): Promise<number> {
    const name = topicName(topic);
    this.shardKeys(name);
    if (options === null || typeof options !== 'object') {
      throw new InvalidOptionsError('clean', `got ${describeValue(options)}; pass { state: 'dead' | 'completed', olderThan?, limit? }`);
    }
    refuseUnknownKeys(refuseAsInvalidOption, 'clean', options, CLEAN_OPTION_KEYS);
    const { state, olderThan = 0, limit = Number.MAX_SAFE_INTEGER } = options;
    if (state !== 'dead' && state !== 'completed') {
      throw new InvalidOptionsError('clean.state', `got ${describeValue(state)}; use 'dead' or 'completed'`);
    }
    if (typeof olderThan !== 'number' || !Number.isInteger(olderThan) || olderThan < 0) {
      throw new InvalidOptionsError('clean.olderThan', `got ${describeValue(olderThan)}; use a whole number of ms, 0 or more`);
    }
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) {
      throw new InvalidOptionsError('clean.limit', `got ${describeValue(limit)}; use a whole number, 1 or more`);
    }
    return this.commands.clean(name, state, olderThan, limit);
  }

  /**
   * Removes everything of a topic, on every shard: its jobs in every state, repeatable schedules,
   * dead letters, kept completed jobs and results, groups, limits, the pause flag, wake-up markers,
   * operation records and any other key under the topic's hash tag (found by SCAN and UNLINKed in
   * batches of 1,000 keys: no call blocks Redis for long, whatever the topic's size). Only the
   * schedules' removal records stay (a day), so no instance stores a removed schedule again.
   *
   * Refuses with `TopicHasRunningJobsError`, removing nothing, while a job of the topic runs (claimed
   * by a consumer on any instance, or a cancelled job's handler still holding its group's turn):
   * the topic is paused first, so no claim starts during the check, and resumed if it was running.
   * With `force: true` it removes the topic anyway: a handler still running then loses its claim
   * (its `job.signal` aborts at its next visibility extension) and whatever it reports afterwards
   * (success, failure, progress, extension) finds the job gone and writes nothing. Consumers of the
   * topic keep running and take the jobs scheduled afterwards.
   *
   * @param options.force remove the topic even while jobs of it run (default false)
   * @returns how many keys were removed, how many jobs the topic held, and how many schedules were removed
   * @throws TopicHasRunningJobsError without `force`, when a job runs
   */
  async obliterate(topic: TopicRef, options?: { force?: boolean }): Promise<{ keys: number; jobs: number; schedules: number }> {
    const name = topicName(topic);
    this.shardKeys(name);
    optionalCallOptions('obliterate', options, OBLITERATE_OPTION_KEYS, '{ force? }');
    const force = options?.force ?? false;
    if (typeof force !== 'boolean') throw new InvalidOptionsError('obliterate.force', `got ${describeValue(force)}; use true or false`);
    return this.commands.obliterate(name, force);
  }

  /** The job with this id and where it is, or null if there is none (never scheduled, done, or cancelled). */
  async get<T = unknown, R = unknown>(topic: TopicRef<T, R>, id: string): Promise<DelayedJob<T, R> | null> {
    const name = topicName(topic);
    this.assertId(name, id);
    this.shardKeys(name);
    return this.reader.job<T, R>(name, id);
  }

  /**
   * Resolves with the job's result once it completes, on whichever instance runs it; at once when it
   * completed already and its consumer keeps completed jobs (`keepCompleted`). The result is the
   * handler's return value when the consumer keeps completed jobs (as `get()` shows it), else
   * `undefined` (typed `Result | undefined` through a `Topic` token). Waiting costs no polling: one
   * subscription per process and topic, shared by all of its waiters. See docs/delayed-jobs.md
   * (Waiting for a job).
   *
   * @throws JobDeadError (rejects) when the job goes to the dead letters, carrying its last error
   * @throws JobCancelledError (rejects) when the job is cancelled
   * @throws JobWaitTimeoutError (rejects) once `timeout` ms passed and the job was read unfinished; the job is left as it is
   * @throws JobNotFoundError (rejects) when no job of that id exists when the wait begins (never
   *   scheduled, or not yet: inside a transaction it is written after the commit; removed; or
   *   completed and not kept)
   * @throws RedisConnectionError (rejects) when Redis cannot be reached to begin the wait; a wait
   *   already begun rides out an outage (its job is read again once Redis is back) until its timeout
   * @throws DelayQueueClosedError (rejects) when the application shuts down while it waits (a job this
   *   application's shutdown drain finishes settles its waiters here with its outcome first)
   *
   * `options.timeout`: how long to wait, in ms, before rejecting with `JobWaitTimeoutError`; default: no
   * timeout, the wait lasts until the job finishes or the application shuts down. It never ends a wait
   * before the job's first read: a job already finished answers from its stored state whatever the
   * timeout, so `0` asks for the outcome of a finished job without waiting for one not finished.
   *
   * @example
   * const id = await delayQueue.schedule('invoice.render', { invoiceId });
   * const pdfUrl = await delayQueue.waitFor('invoice.render', id, { timeout: 30_000 });
   */
  async waitFor<R = unknown>(topic: TopicRef<unknown, R>, id: string, options?: { timeout?: number }): Promise<R | undefined> {
    const name = topicName(topic);
    this.assertId(name, id);
    this.shardKeys(name);
    optionalCallOptions('waitFor', options, WAIT_FOR_OPTION_KEYS, '{ timeout? }');
    const timeout = options?.timeout;
    if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 0 || timeout > 2 ** 31 - 1)) {
      throw new InvalidOptionsError('waitFor.timeout', `got ${describeValue(timeout)}; use a number of ms from 0 to 2147483647`);
    }
    return (await this.waiters.wait(name, id, timeout)) as R | undefined;
  }

  /**
   * The job's log (`JobContext.log`), oldest line first: every attempt's lines, the last 1,000 kept.
   * Readable from any instance while the job runs, and after as long as the job is kept (completed
   * with `keepCompleted`, or dead); empty for a job that logged nothing or is gone. See
   * docs/delayed-jobs.md#job-logs.
   *
   * @example
   * const lines = await delayQueue.logs('report.build', id);
   */
  async logs(topic: TopicRef, id: string): Promise<string[]> {
    const name = topicName(topic);
    this.assertId(name, id);
    this.shardKeys(name);
    return this.reader.logs(name, id);
  }

  /**
   * Counts of a topic's jobs by state and of its repeatable schedules, from one snapshot per shard
   * (a sharded topic's shards are added up).
   */
  async stats(topic: TopicRef): Promise<DelayQueueStats> {
    return this.reader.stats(topicName(topic));
  }

  /**
   * Pauses a topic on every instance: consumers claim no job of it until `resume(topic)`; running
   * jobs finish, jobs keep being scheduled, and a crashed consumer's jobs still return to the queue.
   * Kept in Redis, so instances started later obey it too (it is lost with Redis's data).
   *
   * @returns whether the topic was running (false: it was paused already)
   */
  async pause(topic: TopicRef): Promise<boolean> {
    const name = topicName(topic);
    this.shardKeys(name);
    return this.commands.setPaused(name, true);
  }

  /**
   * Resumes a paused topic: its consumers are woken at once and claim what is due.
   *
   * @returns whether the topic was paused
   */
  async resume(topic: TopicRef): Promise<boolean> {
    const name = topicName(topic);
    this.shardKeys(name);
    return this.commands.setPaused(name, false);
  }

  /** Dead letters, newest first (default 100, at most 10000). */
  async deadLetters<T = unknown>(topic: TopicRef<T>, options?: { limit?: number }): Promise<Array<DelayedJob<T>>> {
    const name = topicName(topic);
    this.shardKeys(name);
    optionalCallOptions('deadLetters', options, DEAD_LETTERS_OPTION_KEYS, '{ limit? }');
    const limit = options?.limit ?? 100;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 10_000) {
      throw new InvalidOptionsError('deadLetters.limit', `got ${describeValue(limit)}; use a whole number from 1 to 10000`);
    }
    return this.reader.deadLetters<T>(name, limit);
  }

  /**
   * Puts dead letters back in the queue, due now, with their attempts reset: one by id, or all of
   * the topic's. Resolves to how many were requeued.
   */
  async retryDead(topic: TopicRef, id?: string): Promise<number> {
    const name = topicName(topic);
    this.shardKeys(name);
    if (id !== undefined) this.assertId(name, id);
    return this.commands.retryDead(name, id);
  }

  /**
   * Runs a job on `topic` at every tick of `schedule`, each tick exactly once across all instances;
   * an upsert by `options.id` (default: the topic). Some consumer of the topic must run somewhere.
   * Inside a transaction with `delayQueue.outbox` it goes through the outbox and `nextRunAt` is an
   * estimate. `limit`, `startDate` and `endDate` bound its runs (docs/scheduling.md, Bounded repeats).
   * See docs/scheduling.md (Repeatable delayed jobs: `repeat()`) for ticks, `catchUp` and guarantees.
   *
   * With a typed topic whose payload type includes neither `null` nor `undefined` (`void`), the
   * options and their `payload` are required (a tick without one carries `null`).
   *
   * @returns the stored schedule and the tick queued now
   * @throws InvalidOptionsError for a bad schedule or option (named in the message)
   *
   * @example
   * await delayQueue.repeat('report.daily', { cron: '0 2 * * *', timeZone: 'Europe/Warsaw' });
   * await delayQueue.repeat('cache.refresh', { every: 30_000 }, { id: 'eu', payload: { region: 'eu' } });
   * await delayQueue.repeat('trial.nudge', { every: 86_400_000 }, { id: userId, limit: 3 });
   */
  async repeat<T>(
    topic: TopicRef<T>,
    schedule: RepeatSchedule,
    ...[options]: null extends NotInferred<T>
      ? [options?: RepeatOptions<NotInferred<T>>]
      : undefined extends NotInferred<T>
        ? [options?: RepeatOptions<NotInferred<T>>]
        : [options: RepeatOptions<NotInferred<T>> & { payload: NotInferred<T> }]
  ): Promise<RepeatInfo> {
    const name = topicName(topic);
    this.shardKeys(name); // validates the topic before anything else
    this.enqueuer.assertOpen('repeat a job');
    const definition = this.repeats.prepare(name, schedule, options);
    return this.scheduleChanges.upsert(name, definition);
  }

  /**
   * Deletes the schedule `id` (default: the topic) and its waiting tick job; a tick already running
   * finishes, and no further tick is enqueued. Inside a transaction with `delayQueue.outbox`, the
   * removal goes through the outbox like `repeat()` (applied after COMMIT, never on ROLLBACK) and
   * resolves to `true` at once: whether the schedule existed is known only when it is applied.
   * Outside a transaction it supersedes the schedule's changes still pending in the outbox, which
   * are deleted first.
   *
   * @returns whether the schedule existed
   */
  async removeRepeat(topic: TopicRef, id?: string): Promise<boolean> {
    const name = topicName(topic);
    this.shardKeys(name);
    const scheduleId = id ?? name;
    this.assertId(name, scheduleId);
    return this.scheduleChanges.remove(name, scheduleId);
  }

  /** The repeatable schedules of `topic`, by next tick (at most 1000 per shard). */
  async listRepeats(topic: TopicRef): Promise<RepeatInfo[]> {
    const name = topicName(topic);
    this.shardKeys(name);
    return this.reader.schedules(name);
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
  consume<T, R = unknown>(
    topic: TopicRef<T, R>,
    handler: DelayedJobHandler<NotInferred<T>, NotInferred<R>>,
    options?: ConsumerOptions,
  ): Consumer;
  /**
   * `consume()` of a plain name with a handler whose parameter is typed: `T` and `R` are the handler's
   * (there is no token to check them against).
   */
  consume<T, R = unknown>(topic: string, handler: DelayedJobHandler<T, R>, options?: ConsumerOptions): Consumer;
  consume(topic: TopicRef, handler: DelayedJobHandler, options?: ConsumerOptions): Consumer {
    const name = topicName(topic);
    return this.consumers.start(name, handler, options, `consume(${JSON.stringify(name)})`, 'consume');
  }

  /** The keys of every shard of `topic` (one entry for a topic that is not sharded). Validates the name. */
  private shardKeys(topic: string): TopicKeys[] {
    assertValidTopic(topic);
    return this.shards.all(topic);
  }

  private assertId(topic: string, id: unknown): void {
    if (typeof id !== 'string' || id.length === 0) {
      throw new InvalidJobError(topic, 'id', `is ${describeValue(id)}; use the non-empty string schedule() returned`);
    }
  }
}

/**
 * Each job's id (a dedupe's: the job the call landed on) with what the write did with it, in order;
 * all `'deferred'` when handed to a transaction.
 */
function withOutcomes(jobs: readonly PreparedJob[], outcomes: readonly JobWritten[] | 'deferred'): ScheduleResult[] {
  if (outcomes === 'deferred') return jobs.map((job) => ({ id: job.id, status: 'deferred' }));
  return jobs.map((job, i) => ({ id: writtenIdOf(outcomes[i], job.id), status: outcomeOf(outcomes[i]) }));
}

/**
 * A call's optional options: absent, or an object of known keys (a bare value such as `waitFor(t, id,
 * 200)` is refused rather than read as no options).
 */
function optionalCallOptions(call: string, options: unknown, known: readonly string[], shape: string): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionsError(call, `got ${describeValue(options)}; pass ${shape} or nothing`);
  }
  refuseUnknownKeys(refuseAsInvalidOption, call, options, known);
}
