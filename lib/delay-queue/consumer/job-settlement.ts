import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { Logger } from '@nestjs/common';
import type { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import type { RedisLockConfig } from '../../core/options/redis-lock-config.js';
import type { RedisConnection } from '../../core/connection/redis-connection.js';
import { retryWithBackoff } from '../../core/time/retry-with-backoff.js';
import type { ResolvedConsumerOptions } from './resolve-consumer-options.js';
import { encodeFailure, type DecodedJob } from '../jobs/job-codec.js';
import { backoffDelay } from '../../core/options/retry-backoff.js';
import { failJobScript } from '../scripts/fail-job.lua.js';
import { releaseJobsScript } from '../scripts/release-jobs.lua.js';
import { describeFailure, failureStack } from './describe-failure.js';
import { isWatched, type HeldJob } from './held-job.js';
import type { RedisFailureStreak } from './redis-failure-streak.js';
import type { VisibilityKeeper } from './visibility-keeper.js';
import { releaseGroupTurnScript } from '../scripts/release-group-turn.lua.js';
import { errorMessage } from '../../core/errors/error-message.js';
import { UnrecoverableJobError } from '../../core/errors/unrecoverable-job.error.js';
import { isRateLimitWait, JobRateLimitedError } from '../../core/errors/job-rate-limited.error.js';
import { postponeRateLimitedJobScript } from '../scripts/postpone-rate-limited-job.lua.js';
import { blockTopicScript } from '../scripts/block-topic.lua.js';

/** What a settlement needs from its consumer. */
interface JobSettlementContext {
  readonly topic: string;
  readonly connection: RedisConnection;
  /** The topic shard's keys. */
  readonly keys: TopicKeys;
  /** The keys of the topic's other shards (a sharded topic), blocked as well when a job is rate limited. */
  readonly otherShards?: readonly TopicKeys[];
  readonly options: ResolvedConsumerOptions;
  readonly retention: RedisLockConfig['delayQueue']['retention'];
  readonly logger: Logger;
  readonly events?: RedisLockEvents;
  readonly visibility: VisibilityKeeper;
  readonly failures: RedisFailureStreak;
  /** True once the consumer has closed: failure records stop retrying. */
  readonly closed: () => boolean;
  /** Logs an unexpected error of the consumer's own code. */
  readonly bug: (where: string, error: unknown) => void;
}

/**
 * Writes the outcomes of claims other than success to Redis (acknowledgements are the ack queue's):
 * failures (retry with backoff or dead letter; straight to the dead letters for an
 * UnrecoverableJobError), rate-limited jobs (a JobRateLimitedError: back to the queue, attempt undone,
 * the topic's claims blocked) and hand-backs (prefetched jobs a busy consumer cannot start soon, and
 * whatever is left at shutdown). A claim stays held (its visibility deadline
 * extended) until its outcome is written; whatever is never written comes back when its visibility
 * deadline passes (at-least-once delivery).
 */
export class JobSettlement {
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly context: JobSettlementContext) {}

  /**
   * Records a failed attempt: a retry after the job's backoff, or the dead letters on the last attempt
   * or for an UnrecoverableJobError; a JobRateLimitedError postpones the job instead (no attempt spent).
   */
  recordFailure<T>(job: HeldJob, decoded: DecodedJob<T> | undefined, failure: unknown): void {
    const retryAfterMs = decoded ? retryAfterOf(failure) : undefined;
    if (retryAfterMs !== undefined) this.track(this.postpone(job, decoded!, retryAfterMs));
    else this.track(this.writeFailure(job, decoded, failure));
  }

  /**
   * Returns prefetched jobs this consumer cannot start soon to the queue, while it runs (see
   * JobRunner), with their attempt undone. Their claims stay held (visibility extended) until Redis
   * has them back, the call retried meanwhile (see retryWhileHeld); a claim lost before that returns
   * when its visibility deadline passes.
   */
  handBackUnstarted(jobs: readonly HeldJob[]): void {
    this.track(
      this.retryWhileHeld(jobs, () => {
        const held = jobs.filter(isWatched);
        return held.length === 0 ? Promise.resolve() : releaseJobs(this.context, held, true);
      }).then(() => {
        for (const job of jobs) {
          job.abandoned = true;
          this.context.visibility.forget(job);
        }
      }),
    );
  }

  /**
   * Runs `write` (an outcome of `jobs`' claims) until it succeeds, retrying with backoff, for as long
   * as any of the claims can still be counted on: while Redis is unreachable the claims stay held
   * (their visibility extended once it answers again), so an outage shorter than the visibility
   * timeout ends with the outcome written, not with a claim held by nobody. Stops when the consumer
   * has closed or no claim is watched any more (lost, cancelled: Redis brings the job back at its
   * deadline, or it is gone). Never rejects.
   */
  private async retryWhileHeld(jobs: readonly HeldJob[], write: () => Promise<unknown>): Promise<void> {
    const { failures } = this.context;
    await retryWithBackoff(write, {
      failed: (error) => failures.failed(error),
      giveUp: () => this.context.closed() || !jobs.some(isWatched),
      delay: () => failures.retryDelay(),
    });
  }

  /**
   * A delivery told its visibility was lost whose handler then returned normally: it may have
   * stopped early, so the job is not acknowledged. While Redis still holds the claim under its token
   * (the loss was counted by the local deadline, an extension may have kept it), the job goes back to
   * the queue at its own place, its attempt kept, to run again (at least once); otherwise another
   * delivery has it already, or it returns when its visibility passes. One try.
   */
  handBackAfterLoss(job: HeldJob): void {
    this.track(this.handBack([job], false, 'after its visibility was lost'));
  }

  /**
   * A delivery whose visibility was lost before its handler started (its preparation outlasted the
   * claim, see JobRunner): while Redis still holds the claim under its token, the job goes back to
   * the queue at its own place with its attempt undone; otherwise another delivery has it already,
   * or it returns when its visibility passes. One try.
   */
  handBackLostUnstarted(job: HeldJob): void {
    this.track(this.handBack([job], true, 'after its visibility was lost before it started'));
  }

  /** Returns claims to the queue for another consumer (at shutdown, unless `occasion` says otherwise). Never rejects. */
  async handBack(jobs: readonly HeldJob[], neverStarted: boolean, occasion = 'at shutdown'): Promise<void> {
    if (jobs.length === 0) return;
    try {
      await releaseJobs(this.context, jobs, neverStarted);
    } catch (error) {
      this.context.logger.warn(
        `Could not hand ${jobs.length} job(s) of topic ${JSON.stringify(this.context.topic)} back ${occasion} ` +
          `(they return when their visibility timeout passes): ${describeFailure(error)}`,
      );
    }
    for (const job of jobs) {
      job.abandoned = true;
      this.context.visibility.forget(job);
    }
  }

  /** Settles once every outcome write started so far has finished. Never rejects. */
  async settled(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  private async writeFailure<T>(job: HeldJob, decoded: DecodedJob<T> | undefined, failure: unknown): Promise<void> {
    const { topic, options, retention, events, logger } = this.context;
    const attempt = decoded?.attempts ?? 1;
    const maxAttempts = decoded?.maxAttempts ?? options.maxAttempts;
    // A body this version cannot read will not get better with retries, nor a job its handler says cannot succeed.
    const unrecoverable = failure instanceof UnrecoverableJobError;
    const last = !decoded || unrecoverable || attempt >= maxAttempts;
    const delay = last ? -1 : backoffDelay(decoded?.backoff ?? options.backoff, attempt);
    const message = describeFailure(failure);
    const stack = failureStack(failure);
    // The log lines end with the stack's frames (its first line repeats the message).
    const frames = stack === undefined ? '' : stack.slice(stack.indexOf('\n') < 0 ? stack.length : stack.indexOf('\n'));
    await this.retryWhileHeld([job], async () => {
      const outcome = await failJobScript.call(this.context.connection, this.context.keys, {
        id: job.id,
        token: job.token,
        retryDelayMs: delay,
        errorJson: encodeFailure(message, stack),
        deadMaxCount: retention.deadLetterMaxCount,
        deadMaxAgeMs: retention.deadLetterMaxAge,
      });
      if (outcome === 'dead' && events?.wants('job.dead')) {
        events.emit('job.dead', { topic, id: job.id, attempt, maxAttempts, error: message, unrecoverable });
      } else if (outcome === 'requeued' && events?.wants('job.retried')) {
        events.emit('job.retried', { topic, id: job.id, attempt, maxAttempts, delayMs: delay, error: message });
      }
      if (outcome === 'dead') {
        const why = unrecoverable && attempt < maxAttempts ? ' as unrecoverable (not retried)' : '';
        logger.error(
          `Job ${JSON.stringify(job.id)} of topic ${JSON.stringify(topic)} failed on attempt ${attempt} of ${maxAttempts} ` +
            `and was moved to the dead letters${why} (retryDead() requeues it): ${message}`,
          stack,
        );
      } else if (outcome === 'requeued') {
        logger.warn(
          `Job ${JSON.stringify(job.id)} of topic ${JSON.stringify(topic)} failed on attempt ${attempt} of ${maxAttempts}, ` +
            `retrying in ${delay} ms: ${message}${frames}`,
        );
      }
    });
    this.context.visibility.forget(job);
  }

  /**
   * A handler threw JobRateLimitedError: the job goes back to its place in the queue with its attempt
   * undone and the shard's claims are blocked for `retryAfterMs` (postpone-rate-limited-job), retried
   * while the claim is held; then the topic's other shards get the same block's end (one try each: a
   * shard left unblocked runs its jobs, which meet the limit and come back the same way).
   */
  private async postpone<T>(job: HeldJob, decoded: DecodedJob<T>, retryAfterMs: number): Promise<void> {
    const { connection, keys, topic, logger, events, otherShards = [] } = this.context;
    let reply: Awaited<ReturnType<typeof postponeRateLimitedJobScript.call>> | undefined;
    await this.retryWhileHeld([job], async () => {
      const args = { id: job.id, token: job.token, dueScore: String(job.dueScore), retryAfterMs, attempts: decoded.attempts };
      reply = await postponeRateLimitedJobScript.call(connection, keys, args);
    });
    this.context.visibility.forget(job);
    if (!reply?.postponed) return;
    const untilMs = reply.blockedUntilMs;
    if (untilMs > 0) {
      const blocks = otherShards.map((shard) =>
        blockTopicScript.call(connection, shard, { untilMs }).catch((error: unknown) => {
          logger.warn(`Could not block shard ${JSON.stringify(shard.topic)} of topic ${JSON.stringify(topic)}: ${describeFailure(error)}`);
        }),
      );
      await Promise.all(blocks);
    }
    logger.warn(
      `Job ${JSON.stringify(job.id)} of topic ${JSON.stringify(topic)} was rate limited on attempt ${decoded.attempts}: back in ` +
        `the queue without spending the attempt; no job of the topic starts for ${retryAfterMs} ms`,
    );
    if (events?.wants('job.rate-limited')) {
      events.emit('job.rate-limited', { topic, id: job.id, attempt: decoded.attempts, retryAfterMs, blockedUntilMs: untilMs });
    }
  }

  /**
   * A delivery of a job of a group that this consumer gave up (cancelled or replaced while it ran)
   * has no handler running any more: the turn its group kept for it is released (one try; if it
   * fails, the turn is released when the claim's deadline passes).
   */
  releaseHeldTurn(job: HeldJob): void {
    if (job.group === undefined || job.turnReported) return;
    job.turnReported = true;
    const { connection, keys, logger, topic } = this.context;
    this.track(
      releaseGroupTurnScript.call(connection, keys, { token: job.token }).catch((error: unknown) => {
        logger.debug?.(
          `Group ${JSON.stringify(job.group)} of topic ${JSON.stringify(topic)} keeps its turn until the claim's ` +
            `deadline: ${errorMessage(error)}`,
        );
      }),
    );
  }

  private track(promise: Promise<unknown>): void {
    const settled = promise.catch((error) => this.context.bug('job settlement', error));
    this.inFlight.add(settled);
    void settled.finally(() => this.inFlight.delete(settled));
  }
}

/**
 * The wait a thrown JobRateLimitedError asks for, read once; undefined for any other value, and for
 * one whose `retryAfterMs` cannot be read or is not a wait the class allows (a Proxy of the error, a
 * subclass that overrides it): that is recorded as an ordinary failure, never left unrecorded.
 */
function retryAfterOf(failure: unknown): number | undefined {
  if (!(failure instanceof JobRateLimitedError)) return undefined;
  try {
    const { retryAfterMs } = failure;
    return isRateLimitWait(retryAfterMs) ? retryAfterMs : undefined;
  } catch {
    return undefined;
  }
}

/** Hands jobs back: each goes back to the due-set score it was claimed from. */
function releaseJobs(context: JobSettlementContext, jobs: readonly HeldJob[], neverStarted: boolean): Promise<unknown> {
  const records = jobs.map((job) => ({ id: job.id, token: job.token, dueScore: job.dueScore }));
  return releaseJobsScript.call(context.connection, context.keys, { undoAttempt: neverStarted }, records);
}
