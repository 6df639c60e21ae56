import { errorMessage } from '../../core/errors/error-message.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { RedisConnection } from '../../core/connection/redis-connection.js';
import { retryWithBackoff } from '../../core/time/retry-with-backoff.js';
import { InvalidJobError } from '../../core/errors/invalid-job.error.js';
import { encodeResult } from '../jobs/job-codec.js';
import { ackJobsScript } from '../scripts/ack-jobs.lua.js';
import type { ScriptArgs } from '../scripts/job-script.js';
import type { ClaimLoopPause } from './claim-loop-pause.js';
import type { HeldJob } from './held-job.js';
import type { RedisFailureStreak } from './redis-failure-streak.js';
import type { ResolvedConsumerOptions } from './resolve-consumer-options.js';
import type { VisibilityKeeper } from './visibility-keeper.js';

/** Tries of one acknowledgement flush before the visibility deadline is left to bring the jobs back. */
const FLUSH_TRIES = 5;

/** What an ack queue needs from its consumer. */
interface AckQueueContext {
  readonly topic: string;
  readonly connection: RedisConnection;
  /** The topic shard's keys. */
  readonly keys: TopicKeys;
  /** The consumer's `keepCompleted`: absent, completed jobs are deleted and results ignored. */
  readonly keepCompleted: ResolvedConsumerOptions['keepCompleted'];
  /** Logs a warning (a result that cannot be kept). */
  readonly warn: (message: string) => void;
  readonly visibility: VisibilityKeeper;
  readonly failures: RedisFailureStreak;
  /** Logs an unexpected error of the consumer's own code. */
  readonly bug: (where: string, error: unknown) => void;
  /** A job given up (cancelled, replaced) after its handler succeeded: its acknowledgement is dropped. */
  readonly dropped: (job: HeldJob) => void;
  /** The claim loop's pause: a group's acknowledgement wakes a loop waiting for work, to claim with it. */
  readonly loopPause: Pick<ClaimLoopPause, 'wakeForWork'>;
}

/**
 * The one owner of a consumer's acknowledgements that Redis has not recorded yet. A job whose
 * handler succeeded is queued here; the next claim carries the queue (one round trip for the ack and
 * the next jobs), or, when no claim is about to be sent, a flush of its own sends it on the next turn
 * of the event loop.
 *
 * Invariants: an unrecorded acknowledgement is in exactly one place, the queue or one send in flight
 * (a claim or a flush); a send that fails puts its acknowledgements back at the front of the queue,
 * so they are sent again (the ack script checks each claim token, so a re-sent or late acknowledgement
 * changes nothing twice); once Redis has recorded one, its job's visibility is no longer kept. An
 * abandoned job (its claim lost or handed back) is dropped from the queue and never sent. Whatever
 * is never sent returns to the queue when its visibility deadline passes (at-least-once delivery).
 */
export class AckQueue {
  private readonly queued: HeldJob[] = [];
  /** Acknowledgements taken by a send whose reply has not come back yet. */
  private readonly sending = new Set<HeldJob>();
  /** Flushes started in the background and not finished yet. */
  private readonly flushes = new Set<Promise<void>>();
  private flushScheduled = false;

  private claimNext = false;

  /**
   * True while the claim loop waits for a free slot or has a claim sent ahead in flight: the claim it
   * sends next carries what is queued, so no flush of its own is scheduled. Set by the claim loop;
   * once false again, what was queued meanwhile is flushed on the next turn (or rides on a claim sent
   * first, and the flush finds nothing).
   */
  get claimComesNext(): boolean {
    return this.claimNext;
  }
  set claimComesNext(value: boolean) {
    this.claimNext = value;
    if (!value && this.queued.length > 0) this.scheduleFlush();
  }

  constructor(private readonly context: AckQueueContext) {}

  /** Acknowledgements queued, not yet taken by a send. */
  get waiting(): number {
    return this.queued.length;
  }

  /** Acknowledgements queued or in flight that Redis has not recorded yet. */
  get unrecorded(): number {
    return this.queued.length + this.sending.size;
  }

  /**
   * Queues the acknowledgement of a job whose handler succeeded with `result`, which is kept only
   * when the consumer keeps completed jobs. A result that is not JSON data, or is larger than
   * `delayQueue.maxPayloadBytes`, is left out with a warning; the job still completes (its work is
   * done: failing it would run it again).
   */
  add(job: HeldJob, result?: unknown): void {
    const keep = this.context.keepCompleted;
    if (keep) job.resultJson = this.encode(job, result, keep.maxResultBytes);
    this.queued.push(job);
    if (this.claimNext) return;
    // A loop waiting for work claims now, carrying the queue: the group's next job comes with it.
    if (job.group !== undefined && this.context.loopPause.wakeForWork()) return;
    this.scheduleFlush();
  }

  /** Flushes on the next turn; if the loop claims first, the acknowledgements ride along and this finds nothing. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.track(this.flush());
    });
  }

  /**
   * Runs `send` with the queued acknowledgements (possibly none), e.g. a claim that carries them.
   * Once it resolves they are recorded; if it rejects they go back to the queue, and the error passes.
   */
  async carry<R>(send: (acks: readonly HeldJob[]) => Promise<R>): Promise<R> {
    const acks = this.take();
    let result: R;
    try {
      result = await send(acks);
    } catch (error) {
      this.putBack(acks);
      throw error;
    }
    this.recorded(acks);
    return result;
  }

  /** Sends every queued acknowledgement now, retrying a few times; what stays unsent waits for the next claim. */
  async flush(): Promise<void> {
    const { failures } = this.context;
    await retryWithBackoff(
      () =>
        this.carry(async (acks) => {
          if (acks.length === 0) return;
          const { connection, keys, keepCompleted } = this.context;
          await ackJobsScript.call(connection, keys, keepArguments(keepCompleted), ackRecords(acks));
        }),
      {
        failed: (error) => failures.failed(error),
        giveUp: (tries) => tries >= FLUSH_TRIES,
        delay: () => failures.retryDelay(),
      },
    );
  }

  /** Settles once every background flush started so far has finished. Never rejects. */
  async settled(): Promise<void> {
    await Promise.all([...this.flushes]);
  }

  /** Empties the queue into a send, leaving out abandoned jobs. */
  private take(): HeldJob[] {
    const acks = this.queued.splice(0).filter((job) => {
      if (job.abandoned) this.context.dropped(job);
      return !job.abandoned;
    });
    for (const job of acks) this.sending.add(job);
    return acks;
  }

  /** A send failed: its acknowledgements (still held, their visibility kept) go back to the front of the queue. */
  private putBack(acks: readonly HeldJob[]): void {
    for (const job of acks) this.sending.delete(job);
    this.queued.unshift(
      ...acks.filter((job) => {
        if (job.abandoned) this.context.dropped(job);
        return !job.abandoned;
      }),
    );
  }

  /** Redis has recorded these acknowledgements. */
  private recorded(acks: readonly HeldJob[]): void {
    for (const job of acks) {
      this.sending.delete(job);
      this.context.visibility.forget(job);
    }
  }

  /**
   * The result's JSON to keep, or undefined (with a warning) for one that is not JSON data or is over
   * `maxBytes`: the job is kept without it.
   */
  private encode(job: HeldJob, result: unknown, maxBytes: number): string | undefined {
    try {
      return encodeResult(this.context.topic, result, maxBytes);
    } catch (error) {
      this.context.warn(
        `Job ${JSON.stringify(job.id)} of topic ${JSON.stringify(this.context.topic)} completed, but its ` +
          `result is not kept: ${error instanceof InvalidJobError ? `\`${error.field}\` ${error.problem}` : errorMessage(error)}`,
      );
      return undefined;
    }
  }

  private track(flush: Promise<void>): void {
    const settled = flush.catch((error) => this.context.bug('acknowledgement flush', error));
    this.flushes.add(settled);
    void settled.finally(() => this.flushes.delete(settled));
  }
}

/** The keep arguments of the ack and claim scripts: a consumer that keeps no completed job sends zeros. */
export function keepArguments(keep: ResolvedConsumerOptions['keepCompleted']): ScriptArgs<typeof ackJobsScript> {
  if (!keep) return { keepsCompleted: false, keepCount: 0, keepAgeMs: 0 };
  return { keepsCompleted: true, keepCount: keep.count, keepAgeMs: keep.age };
}

/** The acknowledgement records of the ack and claim scripts (`acks`): id, claim token, result JSON ('' for none). */
export function ackRecords(acks: readonly HeldJob[]): Array<{ id: string; token: string; result: string }> {
  return acks.map((job) => ({ id: job.id, token: job.token, result: job.resultJson ?? '' }));
}
