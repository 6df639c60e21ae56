import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import { JobCancelledError } from '../../core/errors/job-cancelled.error.js';
import { JobVisibilityLostError } from '../../core/errors/job-visibility-lost.error.js';
import type { RedisConnection } from '../../core/connection/redis-connection.js';
import { leaseLostAt, leaseRenewalInterval } from '../../core/time/lease-policy.js';
import { readClaimToken } from '../jobs/job-codec.js';
import { extendJobsScript } from '../scripts/extend-jobs.lua.js';
import { abortJob, isWatched, type ClaimedRow, type HeldJob } from './held-job.js';
import type { RedisFailureStreak } from './redis-failure-streak.js';

/** What a visibility keeper needs from its consumer. */
interface VisibilityKeeperContext {
  readonly topic: string;
  readonly connection: RedisConnection;
  /** The topic shard's keys. */
  readonly keys: TopicKeys;
  readonly visibilityTimeout: number;
  readonly failures: RedisFailureStreak;
}

/**
 * Keeps the visibility deadline of every job this consumer has claimed, by the lease policy
 * (lease-policy.ts): extends them all in one call every `leaseRenewalInterval`, and aborts a job's
 * signal (JobVisibilityLostError) as soon as its claim can no longer be counted on: Redis refused
 * the extension (someone else owns the job now), or no extension was confirmed in time. Invariant:
 * a handler's signal is aborted before another consumer can take its job over, i.e. at its
 * `leaseLostAt`, a safety margin before the last confirmed visibility deadline; a timer set for the
 * earliest such moment enforces it between extensions. A job cancelled while held (a notice on the
 * cancel channel, or an extension that finds its tombstone) is aborted with JobCancelledError. A job
 * marked abandoned here gets no outcome sent any more: the ack queue and the settlement skip it;
 * while its handler still runs, a given-up job of a group is still extended, which keeps its group's
 * turn held (see keepsGroupTurn). The same deadline is also checked whenever the handler reads its
 * signal (`checkDeadline`), so a handler that runs again after a pause sees the loss at its first read.
 */
export class VisibilityKeeper {
  private readonly held = new Map<string, HeldJob>();
  private extendTimer?: NodeJS.Timeout;
  /** Fires when the earliest watched claim runs out of confirmed visibility (see `armLossTimer`). */
  private lossTimer?: NodeJS.Timeout;
  private extending = false;
  /** A check asked for while an extension was in flight: that one may have read before the cause. */
  private checkAgain = false;

  constructor(private readonly context: VisibilityKeeperContext) {}

  /** Starts keeping the visibility of a freshly claimed row; the job starts out buffered. */
  hold(row: ClaimedRow): HeldJob {
    const job: HeldJob = {
      id: row.id,
      token: readClaimToken(row.body),
      dueMs: row.dueMs,
      claimedAtMs: row.claimedAtMs,
      dueScore: row.dueScore,
      body: row.body,
      confirmedSentAt: row.sentAt,
      phase: 'buffered',
      abandoned: false,
    };
    this.held.set(heldKey(job), job);
    this.ensureExtending();
    // A new claim never runs out before one already watched; only arm when nothing is.
    if (!this.lossTimer) this.armLossTimer();
    return job;
  }

  /** Stops keeping the job's visibility (settled, handed back or lost); stops all timers once none is left. */
  forget(job: HeldJob): void {
    this.held.delete(heldKey(job));
    if (this.held.size === 0) this.stop();
  }

  /** Stops extending and watching (at the end of shutdown, or when nothing is held). */
  stop(): void {
    clearInterval(this.extendTimer);
    this.extendTimer = undefined;
    clearTimeout(this.lossTimer);
    this.lossTimer = undefined;
  }

  /**
   * The deadline check a handler's reads run (`JobContext.signal`, see `checkedOnRead`): a claim whose
   * visibility can no longer be counted on by the monotonic clock is lost now, even when the process
   * was paused and the loss timer has not fired yet. Reads the signal unchecked only.
   */
  checkDeadline(job: HeldJob): void {
    if (isWatched(job) && performance.now() >= leaseLostAt(job.confirmedSentAt, this.context.visibilityTimeout)) {
      this.loseVisibility(job, 'unconfirmed');
    }
  }

  /**
   * Marks the claim lost: aborts the handler's signal and, when someone else owns the job now,
   * abandons it. A claim only unconfirmed (the local count ran out; Redis may still hold it) is not
   * abandoned: a live handler may still settle it, and a buffered job is handed back with its
   * attempt undone when its turn to start comes (JobRunner), since it never ran.
   */
  loseVisibility(job: HeldJob, reason: 'not-owner' | 'unconfirmed'): void {
    abortJob(job, new JobVisibilityLostError(this.context.topic, job.id, reason));
    if (reason === 'not-owner') {
      // Someone else owns it now (or nobody: cancelled); never send an outcome for this claim.
      job.abandoned = true;
      if (job.phase === 'settling') this.forget(job);
    }
  }

  /** A cancel notice: the job claimed under `token` was cancelled; a claim not held here is ignored. */
  cancelled(token: string, id: string): void {
    const job = this.held.get(heldKey({ token, id }));
    if (job && !job.abandoned) this.cancel(job);
  }

  /** Extends (and so checks) every held claim now, e.g. after cancel notices may have been missed. */
  checkNow(): void {
    if (this.extending) this.checkAgain = true;
    else if (this.held.size > 0) void this.extendAll();
  }

  /** The job was cancelled: the handler's signal aborts with JobCancelledError and no outcome is sent. */
  private cancel(job: HeldJob): void {
    job.cancelled = true;
    abortJob(job, new JobCancelledError(this.context.topic, job.id));
    job.abandoned = true;
    // A running handler's job is forgotten once it returns (JobRunner); a buffered one never starts.
    if (job.phase === 'settling') this.forget(job);
  }

  private ensureExtending(): void {
    if (this.extendTimer) return;
    this.extendTimer = setInterval(() => void this.extendAll(), leaseRenewalInterval(this.context.visibilityTimeout));
    this.extendTimer.unref();
  }

  private armLossTimer(): void {
    clearTimeout(this.lossTimer);
    this.lossTimer = undefined;
    const { visibilityTimeout } = this.context;
    let earliest = Number.POSITIVE_INFINITY;
    for (const job of this.held.values()) {
      if (isWatched(job)) earliest = Math.min(earliest, leaseLostAt(job.confirmedSentAt, visibilityTimeout));
    }
    if (earliest === Number.POSITIVE_INFINITY) return;
    const delay = Math.max(0, earliest - performance.now());
    this.lossTimer = setTimeout(() => {
      this.lossTimer = undefined;
      const now = performance.now();
      for (const job of this.held.values()) {
        if (isWatched(job) && now >= leaseLostAt(job.confirmedSentAt, visibilityTimeout)) this.loseVisibility(job, 'unconfirmed');
      }
      this.armLossTimer();
    }, delay);
    this.lossTimer.unref();
  }

  /** Extends the visibility deadline of every held claim in one call. Never rejects. */
  private async extendAll(): Promise<void> {
    // A claim whose visibility deadline itself passed unconfirmed is lost, whether the loss timer told it already or not.
    const now = performance.now();
    const { visibilityTimeout } = this.context;
    for (const job of this.held.values()) {
      if (!job.abandoned && now >= job.confirmedSentAt + visibilityTimeout) this.loseVisibility(job, 'unconfirmed');
    }
    if (this.extending) return;
    const jobs = [...this.held.values()].filter((job) => !job.abandoned || keepsGroupTurn(job));
    if (jobs.length === 0) return;
    this.extending = true;
    const claims = jobs.map((job) => ({ id: job.id, token: job.token }));
    const issued = performance.now();
    try {
      const { connection, keys } = this.context;
      const send = () => extendJobsScript.call(connection, keys, { visibilityMs: visibilityTimeout }, claims);
      const { reply, written } = connection.reachability?.stampWrites?.(send) ?? { reply: send(), written: undefined };
      const flags = await reply;
      // The run that answered, which renewed the claims, came after the extension's last write:
      // later than its issue when it waited in the client's queue for a lost connection to come back.
      const sent = written?.at ?? issued;
      jobs.forEach((job, i) => {
        // A given-up delivery is only sent to keep its group's turn held: nothing to learn from its flag.
        if (job.abandoned) return;
        if (flags[i] === 'held') job.confirmedSentAt = sent;
        else if (flags[i] === 'cancelled') this.cancel(job);
        else this.loseVisibility(job, 'not-owner');
      });
      if (this.held.size > 0) this.armLossTimer();
    } catch (error) {
      this.context.failures.failed(error);
    } finally {
      this.extending = false;
    }
    if (this.checkAgain) {
      this.checkAgain = false;
      this.checkNow();
    }
  }
}

/**
 * A given-up delivery (cancelled or replaced) of a job of a group whose handler still runs: its
 * extensions keep the turn its group holds for it (extend-jobs), so no other job of the group starts
 * while it runs on a live, connected instance. Its turn is released once the handler returns.
 */
function keepsGroupTurn(job: HeldJob): boolean {
  return job.phase === 'running' && job.group !== undefined && !job.turnReported;
}

function heldKey(job: { id: string; token: string }): string {
  return `${job.token}\n${job.id}`;
}
