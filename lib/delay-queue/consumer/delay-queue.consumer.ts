import type { Logger } from '@nestjs/common';
import { ConsumerShutdownTimeoutError } from '../../core/errors/consumer-shutdown-timeout.error.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import type { RedisLockTracing } from '../../core/tracing/redis-lock-tracing.js';
import type { RedisLockConfig } from '../../core/options/redis-lock-config.js';
import type { RedisConnection } from '../../core/connection/redis-connection.js';
import { AckQueue } from './ack-queue.js';
import { ClaimLoop } from './claim-loop.js';
import { ClaimLoopPause } from './claim-loop-pause.js';
import { describeFailure } from './describe-failure.js';
import { abortJob } from './held-job.js';
import { JobClaimer } from './job-claimer.js';
import { JobLogs } from './job-logs.js';
import { JobProgress } from './job-progress.js';
import { JobRunner } from './job-runner.js';
import { JobSettlement } from './job-settlement.js';
import { RedisFailureStreak } from './redis-failure-streak.js';
import { ServerClock } from './server-clock.js';
import { VisibilityKeeper } from './visibility-keeper.js';
import type { ResolvedConsumerOptions } from './resolve-consumer-options.js';
import { errorMessage } from '../../core/errors/error-message.js';
import { setGroupLimitScript } from '../scripts/set-group-limit.lua.js';
import type { Consumer } from '../interfaces/consumer.interface.js';
import type { DelayedJobHandler } from '../interfaces/job-context.interface.js';
import { settleWithin } from '../../core/time/settle-within.js';
import type { CancelListener } from './cancel-listener.js';

/** First and longest wait before `groupConcurrency` is written again after a failure during an outage (ms). */
const GROUP_LIMIT_FIRST_RETRY_MS = 250;
const GROUP_LIMIT_MAX_RETRY_MS = 5_000;
/**
 * Once the shutdown timeout has run out, how long each remaining shutdown step (handing jobs back,
 * flushing acknowledgements) may still wait for Redis. Bounds `close()` when Redis is unreachable.
 */
const SHUTDOWN_REDIS_GRACE_MS = 1_000;

/** Everything a consumer needs from the service that created it. */
export interface ConsumerContext {
  readonly connection: RedisConnection;
  readonly keys: TopicKeys;
  /** The keys of the topic's other shards, for a consumer that is one shard's part of a ShardedConsumer. */
  readonly otherShards?: readonly TopicKeys[];
  readonly retention: RedisLockConfig['delayQueue']['retention'];
  readonly logger: Logger;
  /** Where job life-cycle events go (absent: none are emitted). */
  readonly events?: RedisLockEvents;
  /** Spans around handler runs; absent means none. */
  readonly tracing?: RedisLockTracing;
  readonly onClosed: (consumer: Consumer) => void;
  /** Called for each job as it is claimed; its handler waits for it (see `RepeatScheduler.afterClaim`). */
  readonly beforeRun?: (jobId: string) => Promise<void> | undefined;
  /** Where the cancel notices of running jobs come from (absent: only the visibility extension finds cancels). */
  readonly cancels?: CancelListener;
}

/**
 * Runs one topic (shard)'s jobs in this process, from start to shutdown. The work is done by its
 * parts, built in dependency order, each handed the parts it calls: the visibility keeper extends
 * the visibility deadline of claimed jobs and aborts a handler whose claim is lost; the ack queue
 * owns the acknowledgements not recorded yet (the next claim carries them); the settlement writes
 * failures and hand-backs; the job runner runs handlers; the claim loop claims due jobs. Every part
 * reports Redis failures into one failure streak, which logs and spaces retries; nothing here
 * throws into the void.
 *
 * Shutdown (`close`): stop claiming, hand back jobs claimed but never started, wait for running
 * handlers up to the timeout, abort and hand back the rest, flush outcomes; no step waits for an
 * unreachable Redis beyond the timeout plus a short grace per step. What could not be handed back
 * or acknowledged returns to the queue when its visibility passes.
 */
export class DelayQueueConsumer<T = unknown> implements Consumer {
  private state: 'running' | 'draining' | 'closed' = 'running';
  private readonly visibility: VisibilityKeeper;
  private readonly acks: AckQueue;
  private readonly settlement: JobSettlement;
  private readonly runner: JobRunner<T>;
  private readonly claimer: JobClaimer;
  private readonly loop: ClaimLoop;
  private readonly loopDone: Promise<void>;
  private closing?: Promise<void>;
  private readonly stopListening: () => void;

  constructor(
    readonly topic: string,
    handler: DelayedJobHandler<T>,
    readonly options: ResolvedConsumerOptions,
    private readonly context: ConsumerContext,
  ) {
    const { connection, keys, retention, logger, events, tracing } = context;
    const failures = new RedisFailureStreak(topic, logger, connection.outages);
    const clock = new ServerClock();
    const running = () => this.state === 'running';
    const bug = (where: string, error: unknown) => this.bug(where, error);
    this.visibility = new VisibilityKeeper({
      topic,
      connection,
      keys,
      visibilityTimeout: options.visibilityTimeout,
      failures,
    });
    const visibility = this.visibility;
    this.stopListening =
      context.cancels?.listen(keys.cancelChannel, {
        cancelled: (token, id) => visibility.cancelled(token, id),
        missed: () => visibility.checkNow(),
      }) ?? (() => undefined);
    const warn = (message: string) => logger.warn(message);
    const loopPause = new ClaimLoopPause();
    this.acks = new AckQueue({
      topic,
      connection,
      keys,
      keepCompleted: options.keepCompleted,
      warn,
      visibility: this.visibility,
      failures,
      bug,
      dropped: (job) => this.settlement.releaseHeldTurn(job),
      loopPause,
    });
    this.settlement = new JobSettlement({
      topic,
      connection,
      keys,
      otherShards: context.otherShards,
      options,
      retention,
      logger,
      events,
      visibility: this.visibility,
      failures,
      closed: () => this.state === 'closed',
      bug,
    });
    this.runner = new JobRunner<T>({
      topic,
      handler,
      options,
      events,
      tracing,
      clock,
      visibility: this.visibility,
      acks: this.acks,
      settlement: this.settlement,
      progress: new JobProgress({ topic, connection, keys, visibility: this.visibility }),
      logs: new JobLogs({ topic, connection, keys, logger, events }),
      running,
      bug,
    });
    this.claimer = new JobClaimer({ topic, connection, keys, options, retention, events, clock, rateMax: options.rateLimit?.max ?? 0 });
    this.setGroupLimit(options.groupConcurrency ?? 1);
    this.loop = new ClaimLoop({
      topic,
      connection,
      keys,
      maxIdleWait: options.maxIdleWait,
      claimer: this.claimer,
      runner: this.runner,
      claimsAhead: !options.rateLimit,
      visibility: this.visibility,
      acks: this.acks,
      loopPause,
      settlement: this.settlement,
      failures,
      clock,
      running,
      beforeRun: context.beforeRun,
    });
    this.loopDone = this.loop.run().catch((error) => this.bug('claim loop', error));
  }

  /**
   * Records the topic's `groupConcurrency` in Redis (every consumer of the topic reads it there).
   * During a known outage the write is counted into it and tried again, with backoff, until it is
   * done or the consumer stops; any other failure is warned about.
   */
  private setGroupLimit(limit: number, retryInMs = GROUP_LIMIT_FIRST_RETRY_MS): void {
    const { connection, keys, logger } = this.context;
    setGroupLimitScript.call(connection, keys, { limit }).catch((error: unknown) => {
      if (this.state !== 'running') return;
      if (connection.outages.absorb('group limits set late', error)) {
        setTimeout(
          () => this.state === 'running' && this.setGroupLimit(limit, Math.min(retryInMs * 2, GROUP_LIMIT_MAX_RETRY_MS)),
          retryInMs,
        ).unref();
        return;
      }
      logger.warn(
        `Could not set groupConcurrency ${limit} for topic ${JSON.stringify(this.topic)} (${errorMessage(error)}); ` +
          `its groups keep the limit stored before`,
      );
    });
  }

  get running(): boolean {
    return this.state === 'running';
  }

  get activeCount(): number {
    return this.runner.activeCount;
  }

  /** Blocking connections opened so far (a hung or closed one is replaced). For diagnostics. */
  get blockingConnectionsOpened(): number {
    return this.loop.blockingConnectionsOpened;
  }

  close(options?: { timeout?: number }): Promise<void> {
    const timeout = options?.timeout ?? this.options.shutdownTimeout;
    return (this.closing ??= this.drain(timeout));
  }

  private async drain(timeout: number): Promise<void> {
    const deadline = performance.now() + timeout;
    this.state = 'draining';
    this.loop.wake();
    // A claim stuck on an unreachable Redis must not hold shutdown forever; the loop ends on its own later.
    await settleWithin(this.loopDone, timeout);
    await this.loop.closeWaiter();
    // The marker that told this consumer of the next due job may have reached it alone: the others
    // would sleep up to maxIdleWait. Posting it again wakes one of them to take over the watch.
    await settleWithin(
      this.context.connection.command('zadd', this.context.keys.marker, 0, 'wake').catch(() => undefined),
      SHUTDOWN_REDIS_GRACE_MS,
    );
    const redisBudget = () => Math.max(SHUTDOWN_REDIS_GRACE_MS, deadline - performance.now());
    await settleWithin(this.settlement.handBack(this.runner.takeBuffered(), true), redisBudget());
    const running = this.runner.runningJobs();
    if (running.length > 0) {
      const finished = await settleWithin(Promise.all(running.map((job) => job.done)), deadline - performance.now());
      if (!finished) {
        const stuck = running.filter((job) => job.phase === 'running' && !job.abandoned);
        for (const job of stuck) {
          job.abandoned = true;
          abortJob(job, new ConsumerShutdownTimeoutError(this.topic, job.id, timeout));
        }
        this.context.logger.warn(
          `${stuck.length} handler(s) of topic ${JSON.stringify(this.topic)} still running ${timeout} ms after shutdown began; ` +
            'their signals were aborted and their jobs handed back to the queue.',
        );
        await settleWithin(this.settlement.handBack(stuck, false), redisBudget());
      }
    }
    if (this.acks.unrecorded > 0) await settleWithin(this.acks.flush(), redisBudget());
    await settleWithin(Promise.all([this.acks.settled(), this.settlement.settled()]), redisBudget());
    this.visibility.stop();
    this.stopListening();
    this.claimer.discardLastRecord();
    this.state = 'closed';
    this.context.onClosed(this);
  }

  /** Last line of defence: an unexpected error in the consumer's own code is logged, never left unhandled. */
  private bug(where: string, error: unknown): void {
    this.context.logger.error(
      `Unexpected error in the ${where} of the delay-queue consumer of topic ${JSON.stringify(this.topic)}: ${describeFailure(error)}`,
    );
  }
}
