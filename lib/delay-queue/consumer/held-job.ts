import { JobVisibilityLostError } from '../../core/errors/job-visibility-lost.error.js';
import { abortedUnchecked, reasonUnchecked } from '../../core/time/lease-checked-signal.js';

/** A job this consumer has claimed and not yet settled with Redis. */
export interface HeldJob {
  readonly id: string;
  /** The claim token the job carried when claimed; every outcome sent for this claim quotes it. */
  readonly token: string;
  readonly dueMs: number;
  /** When the claim took it (Redis server clock, ms). */
  readonly claimedAtMs: number;
  /** The job's group, once its body is read (the handler starts). */
  group?: string;
  /** A given-up delivery of a job of a group has reported that nothing of it runs any more (release-group-turn). */
  turnReported?: boolean;
  /** Its score in the due set when claimed (due time and FIFO slot): a hand-back puts it back there. */
  readonly dueScore: number;
  /** `performance.now()` when it entered the runner's prefetch buffer (see JobRunner). */
  bufferedAt?: number;
  /**
   * Work started for the job as it was claimed (a repeat tick enqueues its next tick); its handler
   * starts only once this has settled. Never rejects. Dropped once awaited or the job leaves the buffer.
   */
  preparing?: Promise<void>;
  /** Created on first use: when the handler starts (its `JobContext.signal`), or to abort a job that has not started. */
  controller?: AbortController;
  /** The stored job as claimed; dropped once the handler starts. */
  body?: string;
  /**
   * `performance.now()` when the command that last confirmed the claim (the claim or an extension)
   * was sent: Redis keeps the claim for at least `visibilityTimeout` after it.
   */
  confirmedSentAt: number;
  /** buffered: claimed, waiting for a free slot; running: handler in progress; settling: ack or failure being recorded. */
  phase: 'buffered' | 'running' | 'settling';
  /** The claim is gone (visibility lost, or handed back at shutdown): nothing more is sent for it. */
  abandoned: boolean;
  /** The job was cancelled while held (its signal's reason is JobCancelledError): reported as cancelled. */
  cancelled?: boolean;
  /** The handler's return value as JSON, set only for a consumer that keeps completed jobs (see AckQueue). */
  resultJson?: string;
  /** Settles once the handler has returned and its outcome is queued or recorded. Never rejects. */
  done?: Promise<void>;
}

/** One row of a claim script's reply. */
export interface ClaimedRow {
  readonly id: string;
  readonly body: string;
  readonly dueMs: number;
  /** Its score in the due set: `dueMs * DUE_SCORE_SLOTS + FIFO slot`. */
  readonly dueScore: number;
  /** When the claim took it (Redis server clock, ms). */
  readonly claimedAtMs: number;
  /**
   * No later than when Redis began the claim's visibility (`performance.now()`): the claim's last
   * write, less the age of a claim a later run answered (a re-sent claim). The server's visibility
   * deadline is at least `visibilityTimeout` after it.
   */
  readonly sentAt: number;
}

/** The job's abort controller, created on first use. */
export function controllerOf(job: HeldJob): AbortController {
  return (job.controller ??= new AbortController());
}

/** Aborts the job's signal with `reason`, unless it is aborted already (the first reason stays). */
export function abortJob(job: HeldJob, reason: Error): void {
  const controller = controllerOf(job);
  if (!abortedUnchecked(controller.signal)) controller.abort(reason);
}

/**
 * True while Redis may still hold the claim for us: not abandoned and its signal not aborted. Reads
 * the signal without its deadline check (see VisibilityKeeper.checkOnRead), which calls this.
 */
export function isWatched(job: HeldJob): boolean {
  return !job.abandoned && !(job.controller !== undefined && abortedUnchecked(job.controller.signal));
}

/**
 * Whether this delivery was told its claim is gone for lost visibility (its signal aborted with
 * JobVisibilityLostError): a handler that heeds the signal may have stopped early.
 */
export function visibilityLost(job: HeldJob): boolean {
  return job.controller !== undefined && reasonUnchecked(job.controller.signal) instanceof JobVisibilityLostError;
}
