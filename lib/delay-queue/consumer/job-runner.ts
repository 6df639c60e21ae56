import type { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import type { RedisLockTracing } from '../../core/tracing/redis-lock-tracing.js';
import type { ResolvedConsumerOptions } from './resolve-consumer-options.js';
import { runInJobContext, type DelayedJobHandler, type JobContext } from '../interfaces/job-context.interface.js';
import { decodeJob, type DecodedJob } from '../jobs/job-codec.js';
import type { ClaimLeaseKeeper } from './claim-lease-keeper.js';
import { controllerOf, type HeldJob } from './held-job.js';
import type { JobSettlement } from './job-settlement.js';
import type { ServerClock } from './server-clock.js';

export interface JobRunnerContext<T> {
  readonly topic: string;
  readonly handler: DelayedJobHandler<T>;
  readonly options: ResolvedConsumerOptions;
  readonly events?: RedisLockEvents;
  readonly tracing?: RedisLockTracing;
  readonly clock: ServerClock;
  readonly leases: ClaimLeaseKeeper;
  readonly settlement: JobSettlement;
  /** True while the consumer runs: buffered jobs start only then (at shutdown they are handed back). */
  readonly running: () => boolean;
  /** Called after a handler has returned and its outcome is queued. */
  readonly onSlotFreed: () => void;
  /** Logs an unexpected error of the consumer's own code. */
  readonly bug: (where: string, error: unknown) => void;
  /**
   * Called for each job as soon as it is claimed (a repeat tick enqueues its next tick), so a job
   * waiting in the prefetch buffer, or handed back at shutdown, does not hold up the next tick; the
   * job's handler starts only once it has settled. Never rejects.
   */
  readonly beforeRun?: (jobId: string) => Promise<void> | undefined;
}

/**
 * Runs claimed jobs' handlers, at most `concurrency` at once, with a prefetch buffer of up to
 * `concurrency` more claimed jobs so that handlers keep running while the next claim travels. A
 * handler gets the decoded payload and a frozen `JobContext`; its outcome goes to the settlement.
 */
export class JobRunner<T> {
  /** Claimed ahead of a free slot, oldest first. */
  private readonly buffer: HeldJob[] = [];
  /** Jobs whose handler has not returned yet. */
  private readonly active = new Set<HeldJob>();
  /** `beforeRun` of claimed jobs whose handler has not started, still in progress. */
  private readonly preparing = new Map<HeldJob, Promise<void>>();

  constructor(private readonly context: JobRunnerContext<T>) {}

  get activeCount(): number {
    return this.active.size;
  }

  /** How many more jobs this runner can take now: free slots plus free places in the buffer. */
  get room(): number {
    return 2 * this.context.options.concurrency - this.active.size - this.buffer.length;
  }

  /** Buffers freshly claimed jobs and starts as many as there are free slots. */
  enqueue(jobs: readonly HeldJob[]): void {
    for (const job of jobs) {
      const preparing = this.context.beforeRun?.(job.id);
      if (preparing) this.preparing.set(job, preparing);
    }
    this.buffer.push(...jobs);
    this.startBuffered();
  }

  /** Empties the buffer (at shutdown, to hand its jobs back). */
  takeBuffered(): HeldJob[] {
    const taken = this.buffer.splice(0);
    for (const job of taken) this.preparing.delete(job);
    return taken;
  }

  /** Jobs whose handler is running now. */
  runningJobs(): HeldJob[] {
    return [...this.active];
  }

  private startBuffered(): void {
    while (this.active.size < this.context.options.concurrency && this.buffer.length > 0) {
      const job = this.buffer.shift()!;
      if (job.abandoned) {
        this.preparing.delete(job);
        this.context.leases.forget(job);
        continue;
      }
      const body = job.body!;
      job.body = undefined;
      job.phase = 'running';
      this.active.add(job);
      job.done = this.execute(job, body).catch((error) => this.context.bug('job completion', error));
    }
  }

  private async execute(job: HeldJob, body: string): Promise<void> {
    const { topic, handler, options, events, tracing } = this.context;
    let decoded: DecodedJob<T> | undefined;
    let failure: unknown;
    let succeeded = false;
    let startedAt = 0;
    try {
      const preparing = this.preparing.get(job);
      if (preparing) {
        this.preparing.delete(job);
        await preparing;
      }
      decoded = decodeJob<T>(body);
      if (events && (events.wants('job.started') || events.wants('job.succeeded') || events.wants('job.failed'))) {
        startedAt = performance.now();
        if (events.wants('job.started')) {
          const latenessMs = Math.max(0, this.context.clock.now() - job.dueMs);
          events.emit('job.started', { topic, id: job.id, attempt: decoded.attempts, latenessMs });
        }
      }
      const context: JobContext = Object.freeze({
        id: job.id,
        topic,
        attempt: decoded.attempts,
        maxAttempts: decoded.maxAttempts ?? options.maxAttempts,
        scheduledAt: new Date(job.dueMs),
        createdAt: new Date(decoded.createdAt),
        fencingToken: job.token,
        get signal() {
          return controllerOf(job).signal;
        },
      });
      if (tracing?.enabled) {
        const payload = decoded.payload;
        const info = { topic, id: job.id, attempt: decoded.attempts, traceparent: decoded.traceparent };
        await tracing.traceHandler(info, async () => runInJobContext(context, () => handler(payload, context)));
      } else {
        const payload = decoded.payload;
        await runInJobContext(context, () => handler(payload, context));
      }
      succeeded = true;
    } catch (error) {
      failure = error;
    }
    this.active.delete(job);
    if (startedAt > 0 && decoded) {
      const runMs = performance.now() - startedAt;
      const base = { topic, id: job.id, attempt: decoded.attempts, runMs };
      if (succeeded) events!.emit('job.succeeded', base);
      else events!.emit('job.failed', { ...base, error: failure });
    }
    if (job.abandoned) {
      this.context.leases.forget(job);
    } else {
      job.phase = 'settling';
      if (succeeded) this.context.settlement.acknowledge(job);
      else this.context.settlement.recordFailure(job, decoded, failure);
    }
    if (this.context.running()) this.startBuffered();
    this.context.onSlotFreed();
  }
}
