import type { RedisOutageLog } from '../../core/redis/outage-log.js';
import type { Logger } from '@nestjs/common';
import type { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import { newOperationId } from '../jobs/operation-record.js';
import { backoffDelay } from '../../core/options/retry-backoff.js';
import type { PreparedJob } from '../jobs/prepare-job.js';
import type { JobWriter } from './job-writer.js';
import { retryWithBackoff } from '../../core/time/retry-with-backoff.js';
import { settleWithin } from '../../core/time/settle-within.js';

/** First retry delay after a failed write; doubles per attempt up to the cap, with jitter (50-100 %). */
const FIRST_RETRY_MS = 200;
const MAX_RETRY_MS = 10_000;
/** Cap of the retry delay once shutdown has begun: flush as soon as Redis answers. */
const MAX_RETRY_WHILE_FLUSHING_MS = 500;
/** Ids named in one log line at most (the events carry them all). */
const MAX_IDS_LOGGED = 20;

/** One committed batch whose write has not been confirmed yet. */
interface PendingWrite {
  readonly topic: string;
  readonly jobs: readonly PreparedJob[];
  readonly writeId: string;
  attempts: number;
  lastError: string;
  retryInMs: number;
  /** Reported lost (shutdown deadline): the loop stops. */
  abandoned: boolean;
  /** Whether a failed attempt was logged (not only counted in a Redis outage): then its success is logged too. */
  logged?: boolean;
  /** Ends the current backoff sleep early. */
  wake?: () => void;
  /** Settles when the batch is written or abandoned. Never rejects. */
  done?: Promise<void>;
}

/**
 * Writes jobs scheduled inside a transaction once it has committed, and does not give up: the
 * transaction's data is committed, so its jobs must reach Redis. The first attempt runs in the
 * transaction's completion hook; if it fails, the batch is retried in the background with capped,
 * jittered backoff for as long as the process runs. Graceful shutdown flushes what is pending until
 * a deadline; what still could not be written is reported loudly (error log with the ids, the
 * `job.schedule.lost` event). The job ids are fixed before the first attempt and every attempt of a
 * batch carries the same operation records (the batch's write id, see `JobWriter.write`), so an
 * attempt that landed although it seemed to fail (a lost reply) is never written twice.
 */
export class AfterCommitWriter {
  private readonly pending = new Set<PendingWrite>();
  private flushing = false;
  private closed = false;

  constructor(
    private readonly writer: JobWriter,
    private readonly events: RedisLockEvents,
    private readonly logger: Logger,
    /** Where failures to reach Redis go during a known outage (counted there, not logged here). */
    private readonly outages?: RedisOutageLog,
  ) {}

  /** Jobs committed but not yet confirmed written. */
  get pendingJobs(): number {
    let count = 0;
    for (const entry of this.pending) count += entry.jobs.length;
    return count;
  }

  /**
   * Writes a committed batch. Resolves after the first attempt (the jobs are then normally in Redis
   * when the unit of work ends); a failed first attempt hands the batch to the retry loop. Never rejects.
   */
  async write(topic: string, jobs: readonly PreparedJob[]): Promise<void> {
    const entry: PendingWrite = { topic, jobs, writeId: newOperationId(), attempts: 0, lastError: '', retryInMs: 0, abandoned: false };
    if (this.closed) {
      this.lose(entry, 'the transaction committed after the delay queue had shut down');
      return;
    }
    try {
      const outcomes = await this.writer.write(topic, jobs, entry.writeId);
      this.writer.reportScheduled(topic, jobs, outcomes);
      return;
    } catch (error) {
      this.failed(entry, error);
    }
    if (this.closed) {
      this.lose(entry, 'the delay queue has shut down');
      return;
    }
    this.pending.add(entry);
    entry.done = this.retry(entry);
  }

  /**
   * At shutdown: retries pending batches at once and keeps retrying (backoff capped at 0.5 s) until
   * all are written or `timeoutMs` has passed; then reports the rest as lost. Batches committed
   * meanwhile are waited for too.
   */
  async flush(timeoutMs: number): Promise<void> {
    this.flushing = true;
    for (const entry of this.pending) entry.wake?.();
    const deadline = performance.now() + timeoutMs;
    while (this.pending.size > 0) {
      const remaining = deadline - performance.now();
      if (remaining <= 0) break;
      await settleWithin(Promise.all([...this.pending].map((entry) => entry.done)), remaining);
    }
    this.close();
  }

  /** Stops retrying; whatever is still pending is reported lost. */
  close(): void {
    this.closed = true;
    for (const entry of [...this.pending]) {
      this.lose(entry, `Redis could not be reached before the shutdown deadline (${entry.attempts} attempt(s))`);
    }
  }

  /** Retries a batch whose first attempt failed until it is written or abandoned. */
  private async retry(entry: PendingWrite): Promise<void> {
    const outcome = await retryWithBackoff(() => this.writer.write(entry.topic, entry.jobs, entry.writeId), {
      failuresSoFar: entry.attempts,
      failed: (error) => {
        if (!entry.abandoned) this.failed(entry, error);
      },
      delay: () => entry.retryInMs,
      wait: (ms) => this.sleep(entry, ms),
      stopped: () => entry.abandoned,
    });
    if (!outcome.succeeded) return;
    this.pending.delete(entry);
    if (entry.abandoned) {
      this.logger.warn(`${describeBatch(entry)} reported lost at shutdown were written after all (attempt ${entry.attempts + 1}).`);
      return;
    }
    this.writer.reportScheduled(entry.topic, entry.jobs);
    const written = `${describeBatch(entry)} written after ${entry.attempts + 1} attempts.`;
    if (entry.logged) this.logger.log(written);
    else this.logger.debug(written);
  }

  private failed(entry: PendingWrite, error: unknown): void {
    entry.attempts++;
    entry.lastError = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const cap = this.flushing ? MAX_RETRY_WHILE_FLUSHING_MS : MAX_RETRY_MS;
    entry.retryInMs = Math.max(1, backoffDelay({ delay: FIRST_RETRY_MS, factor: 2, maxDelay: cap, jitter: 0.5 }, entry.attempts));
    if (this.events.wants('job.schedule.retrying')) {
      this.events.emit('job.schedule.retrying', {
        topic: entry.topic,
        ids: entry.jobs.map((job) => job.id),
        attempt: entry.attempts,
        retryInMs: entry.retryInMs,
        error: entry.lastError,
      });
    }
    // Every attempt is an event; a Redis outage counts them in its log, which names them when Redis
    // is back; otherwise the log gets attempts 1, 2, 4, 8, … so a failure does not flood it.
    if (this.outages?.absorb('committed jobs writes retried', error)) return;
    if ((entry.attempts & (entry.attempts - 1)) === 0) {
      entry.logged = true;
      this.logger.error(
        `Could not write ${describeBatch(entry)} scheduled in a committed transaction (attempt ${entry.attempts}): ` +
          `${entry.lastError.replace(/\.$/, '')}. Retrying in ${entry.retryInMs} ms, with backoff, until it is written; ` +
          'a shutdown keeps trying until delayQueue.shutdownTimeout.',
      );
    }
  }

  private lose(entry: PendingWrite, reason: string): void {
    entry.abandoned = true;
    entry.wake?.();
    this.pending.delete(entry);
    const payloadBytes = entry.jobs.reduce((sum, job) => sum + job.payloadBytes, 0);
    const error = entry.lastError || reason;
    this.logger.error(
      `LOST ${describeBatch(entry)} (${payloadBytes} bytes of payload) scheduled in a committed transaction: ${reason}; ` +
        `last error: ${error}. These jobs will not run unless scheduled again.`,
    );
    if (this.events.wants('job.schedule.lost')) {
      this.events.emit('job.schedule.lost', {
        topic: entry.topic,
        ids: entry.jobs.map((job) => job.id),
        payloadBytes,
        attempts: entry.attempts,
        error,
      });
    }
  }

  /** Waits `ms`, or less when woken (shutdown began, or the batch was abandoned). */
  private sleep(entry: PendingWrite, ms: number): Promise<void> {
    if (this.flushing) ms = Math.min(ms, MAX_RETRY_WHILE_FLUSHING_MS);
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        entry.wake = undefined;
        resolve();
      }
      entry.wake = done;
    });
  }
}

/** `2 job(s) of topic "t" (ids "a", "b")`, naming at most MAX_IDS_LOGGED ids. */
function describeBatch(entry: PendingWrite): string {
  const ids = entry.jobs.slice(0, MAX_IDS_LOGGED).map((job) => JSON.stringify(job.id));
  const more = entry.jobs.length > MAX_IDS_LOGGED ? `, … ${entry.jobs.length - MAX_IDS_LOGGED} more` : '';
  return `${entry.jobs.length} job(s) of topic ${JSON.stringify(entry.topic)} (ids ${ids.join(', ')}${more})`;
}
