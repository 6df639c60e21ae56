import type { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import type { RedisLockTracing } from '../../core/tracing/redis-lock-tracing.js';
import type { ResolvedConsumerOptions } from './resolve-consumer-options.js';
import { runInJobContext, type DelayedJobHandler, type JobContext } from '../interfaces/job-context.interface.js';
import { decodeJob, readGroup, type DecodedJob } from '../jobs/job-codec.js';
import type { AckQueue } from './ack-queue.js';
import { DeliveryContext } from './delivery-context.js';
import { isWatched, visibilityLost, type HeldJob } from './held-job.js';
import type { JobLogs } from './job-logs.js';
import type { JobProgress } from './job-progress.js';
import type { JobSettlement } from './job-settlement.js';
import { JobRateLimitedError } from '../../core/errors/job-rate-limited.error.js';
import type { ServerClock } from './server-clock.js';
import { PREFETCH_DEPTH, SlotTurnover } from './slot-turnover.js';
import type { VisibilityKeeper } from './visibility-keeper.js';

/**
 * A prefetched job that has not started this long after it was claimed is handed back to the queue
 * (its attempt undone, at its own place), for a consumer that can run it now.
 */
const PREFETCH_HOLD_MS = 250;

/** What a job runner needs from its consumer. */
interface JobRunnerContext<T> {
  readonly topic: string;
  readonly handler: DelayedJobHandler<T>;
  readonly options: ResolvedConsumerOptions;
  readonly events?: RedisLockEvents;
  readonly tracing?: RedisLockTracing;
  readonly clock: ServerClock;
  readonly visibility: VisibilityKeeper;
  /** Where a succeeded job's acknowledgement goes. */
  readonly acks: AckQueue;
  /** Where a failed attempt and a hand-back go. */
  readonly settlement: JobSettlement;
  /** Writes `JobContext.progress()`. */
  readonly progress: JobProgress;
  /** Writes `JobContext.log()`. */
  readonly logs: JobLogs;
  /** True while the consumer runs: buffered jobs start only then (at shutdown they are handed back). */
  readonly running: () => boolean;
  /** Logs an unexpected error of the consumer's own code. */
  readonly bug: (where: string, error: unknown) => void;
}

/**
 * Runs claimed jobs' handlers, at most `concurrency` at once, plus a prefetch buffer of claimed jobs
 * waiting for a slot, so that handlers keep running while the next claim travels. A handler gets the
 * decoded payload and a frozen `JobContext`, once the job's preparation (`HeldJob.preparing`) has
 * settled; a success goes to the ack queue, a failure to the settlement.
 *
 * Invariant: a due job never waits in this buffer while another consumer could run it. The buffer
 * only takes as many jobs as slots are about to free up (short handlers that finished lately, up to
 * PREFETCH_DEPTH times the concurrency, see SlotTurnover), so a consumer of long handlers claims no
 * more than its free slots; and a buffered job not started PREFETCH_HOLD_MS after its claim (the handlers turned
 * slow) is handed back to the queue at its own place, its attempt undone.
 */
export class JobRunner<T> {
  /** Claimed ahead of a free slot, oldest first. */
  private readonly buffer: HeldJob[] = [];
  /** Jobs whose handler has not returned yet. */
  private readonly active = new Set<HeldJob>();
  private readonly turnover: SlotTurnover;
  /** Fires when the oldest buffered job has waited PREFETCH_HOLD_MS. */
  private holdTimer?: NodeJS.Timeout;
  /** Resolves `whenSlotFrees()`'s promise; set while someone waits for it. */
  private freeSlot?: () => void;
  private slotFrees?: Promise<void>;

  /** What a delivery's context calls (see DeliveryContext): made once, not per job. */
  private readonly checkDeadline = (job: HeldJob) => this.context.visibility.checkDeadline(job);
  private readonly recordProgress = async (job: HeldJob, value: unknown, attempt: number) => {
    await this.context.progress.record(job, value);
    this.context.events?.emitIfWanted('job.progress', () => ({ topic: this.context.topic, id: job.id, attempt, progress: value }));
  };
  private readonly appendLog = (job: HeldJob, message: unknown) => this.context.logs.append(job, message);

  constructor(private readonly context: JobRunnerContext<T>) {
    this.turnover = new SlotTurnover(context.options.concurrency * PREFETCH_DEPTH);
  }

  get activeCount(): number {
    return this.active.size;
  }

  /**
   * How many more jobs this runner can take now: free slots, plus as many as slots are about to free
   * up, less what is buffered. With a `rateLimit`, free slots only: a claim is the start the limit
   * counts, so a claimed job must start at once, not wait in the buffer.
   */
  get room(): number {
    const { concurrency, rateLimit } = this.context.options;
    const prefetch = rateLimit ? 0 : this.turnover.recent();
    return concurrency - this.active.size + prefetch - this.buffer.length;
  }

  /** The claim loop sends a claim for `room` jobs now. */
  claimSent(): void {
    this.turnover.claimSent();
  }

  /** Resolves once the next handler has returned and its outcome is queued. */
  whenSlotFrees(): Promise<void> {
    return (this.slotFrees ??= new Promise<void>((resolve) => (this.freeSlot = resolve)));
  }

  /** Buffers freshly claimed jobs and starts as many as there are free slots. */
  enqueue(jobs: readonly HeldJob[]): void {
    const now = performance.now();
    for (const job of jobs) job.bufferedAt = now;
    this.buffer.push(...jobs);
    this.startBuffered();
    this.armHoldTimer();
  }

  /** Empties the buffer (at shutdown, to hand its jobs back). */
  takeBuffered(): HeldJob[] {
    this.clearHoldTimer();
    const taken = this.buffer.splice(0);
    for (const job of taken) job.preparing = undefined;
    return taken;
  }

  /** Jobs whose handler is running now. */
  runningJobs(): HeldJob[] {
    return [...this.active];
  }

  private startBuffered(): void {
    while (this.active.size < this.context.options.concurrency && this.buffer.length > 0) {
      const job = this.buffer.shift()!;
      // A claim that can no longer be counted on (this process was paused past its deadline, or Redis
      // ran the claim late) never starts.
      this.context.visibility.checkDeadline(job);
      if (job.abandoned) {
        this.dropAbandoned(job);
        continue;
      }
      if (!isWatched(job)) {
        // Unconfirmed, not taken over: Redis may still hold the claim, and the job never ran. It goes
        // back at its own place with its attempt undone (a claim another consumer took since refuses
        // the hand-back by its token).
        job.phase = 'settling';
        this.context.settlement.handBackLostUnstarted(job);
        continue;
      }
      const body = job.body!;
      job.body = undefined;
      job.phase = 'running';
      this.active.add(job);
      job.done = this.execute(job, body).catch((error) => this.context.bug('job completion', error));
    }
    if (this.buffer.length === 0) this.clearHoldTimer();
  }

  /**
   * A buffered job given up before it started (cancelled, replaced, or its visibility lost) leaves
   * the buffer without running: a turn its group holds for it (cancel and replace hold it for a
   * claimed job, see group-lua-snippet.ts) is released now, not at the claim's deadline.
   */
  private dropAbandoned(job: HeldJob): void {
    job.preparing = undefined;
    this.context.visibility.forget(job);
    if (job.body !== undefined) job.group ??= readGroup(job.body);
    this.context.settlement.releaseHeldTurn(job);
  }

  /** Watches the oldest buffered job's hold limit (the buffer is in claim order). */
  private armHoldTimer(): void {
    if (this.holdTimer || this.buffer.length === 0) return;
    const delay = Math.max(0, this.buffer[0].bufferedAt! + PREFETCH_HOLD_MS - performance.now());
    this.holdTimer = setTimeout(() => {
      this.holdTimer = undefined;
      // At shutdown the whole buffer is handed back by `takeBuffered`'s caller.
      if (!this.context.running()) return;
      this.handBackHeldTooLong();
      this.armHoldTimer();
    }, delay);
    this.holdTimer.unref();
  }

  private clearHoldTimer(): void {
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
  }

  /** Hands back the buffered jobs that waited PREFETCH_HOLD_MS for a slot. */
  private handBackHeldTooLong(): void {
    const now = performance.now();
    let count = 0;
    while (count < this.buffer.length && now - this.buffer[count].bufferedAt! >= PREFETCH_HOLD_MS) count++;
    if (count === 0) return;
    const handed: HeldJob[] = [];
    for (const job of this.buffer.splice(0, count)) {
      job.preparing = undefined;
      if (job.abandoned) this.dropAbandoned(job);
      else handed.push(job);
    }
    if (handed.length > 0) this.context.settlement.handBackUnstarted(handed);
  }

  private async execute(job: HeldJob, body: string): Promise<void> {
    const { topic, handler, options, events, tracing } = this.context;
    let decoded: DecodedJob<T> | undefined;
    let failure: unknown;
    let result: unknown;
    let succeeded = false;
    let startedAt = 0;
    const began = performance.now();
    if (!(await this.prepared(job))) return this.dropUnstarted(job);
    try {
      decoded = decodeJob<T>(body);
      job.group = decoded.group;
      if (
        events &&
        (events.wants('job.started') || events.wants('job.succeeded') || events.wants('job.failed') || events.wants('job.cancelled'))
      ) {
        startedAt = performance.now();
        if (events.wants('job.started')) {
          const latenessMs = Math.max(0, this.context.clock.now() - job.dueMs);
          events.emit('job.started', { topic, id: job.id, attempt: decoded.attempts, latenessMs });
        }
      }
      const facts = {
        topic,
        attempt: decoded.attempts,
        maxAttempts: decoded.maxAttempts ?? options.maxAttempts,
        createdAt: decoded.createdAt,
        group: decoded.group,
      };
      const context: JobContext = Object.freeze(new DeliveryContext(job, facts, this.checkDeadline, this.recordProgress, this.appendLog));
      if (tracing?.enabled) {
        const payload = decoded.payload;
        const info = { topic, id: job.id, attempt: decoded.attempts, traceparent: decoded.traceparent };
        result = await tracing.traceHandler(info, async () => runInJobContext(context, () => handler(payload, context)));
      } else {
        const payload = decoded.payload;
        result = await runInJobContext(context, () => handler(payload, context));
      }
      succeeded = true;
    } catch (error) {
      failure = error;
    }
    // The job's log lines reach Redis before its acknowledgement or failure (never rejects).
    const logged = this.context.logs.flushed(job);
    if (logged) await logged;
    this.active.delete(job);
    const finishedAt = performance.now();
    this.turnover.finished(finishedAt - began, finishedAt);
    if (startedAt > 0 && decoded) {
      const runMs = performance.now() - startedAt;
      const base = { topic, id: job.id, attempt: decoded.attempts, runMs };
      // A job cancelled while it ran is gone whatever its handler did: reported as cancelled only.
      if (job.cancelled) events!.emit('job.cancelled', base);
      else if (succeeded) events!.emit('job.succeeded', { ...base, result });
      // A rate-limited job did not fail: `job.rate-limited` follows once Redis has it back.
      else if (!(failure instanceof JobRateLimitedError)) events!.emit('job.failed', { ...base, error: failure });
    }
    if (job.abandoned) {
      this.context.visibility.forget(job);
      this.context.settlement.releaseHeldTurn(job);
    } else {
      job.phase = 'settling';
      // A return after the signal said the claim was lost is no proof the work was done (a handler
      // that heeds its signal returns early): the job goes back to the queue to run again.
      if (succeeded && visibilityLost(job)) this.context.settlement.handBackAfterLoss(job);
      else if (succeeded) this.context.acks.add(job, result);
      else this.context.settlement.recordFailure(job, decoded, failure);
    }
    this.slotFreed();
  }

  /** Awaits the job's preparation, if any; false when its claim was lost meanwhile. Never rejects. */
  private async prepared(job: HeldJob): Promise<boolean> {
    const preparing = job.preparing;
    if (!preparing) return true;
    job.preparing = undefined;
    await preparing;
    // As for a buffered job (startBuffered): a claim that can no longer be counted on once its
    // preparation is over (the preparation outlasted it: a stall, an outage) never starts.
    this.context.visibility.checkDeadline(job);
    return isWatched(job);
  }

  /**
   * A job whose claim was lost (or that was given up) while it was prepared: its handler never
   * starts. Still held in Redis under its claim (the loss was counted by the local deadline), it goes
   * back to the queue at its own place with its attempt undone; given up, it is dropped as from the buffer.
   */
  private dropUnstarted(job: HeldJob): void {
    this.active.delete(job);
    if (job.abandoned) this.dropAbandoned(job);
    else {
      job.phase = 'settling';
      this.context.settlement.handBackLostUnstarted(job);
    }
    this.slotFreed();
  }

  /** A slot is free again: buffered jobs start in it, and whoever waits for a free slot is told. */
  private slotFreed(): void {
    if (this.context.running()) this.startBuffered();
    const freeSlot = this.freeSlot;
    this.freeSlot = this.slotFrees = undefined;
    freeSlot?.();
  }
}
