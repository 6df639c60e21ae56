import { AsyncLocalStorage } from 'node:async_hooks';
import { processShared } from '../../core/runtime/process-shared.js';

/** What a delayed-job handler learns about the delivery it is running: `(payload, job) => ...`. */
export interface JobContext {
  /** The job id. */
  readonly id: string;
  /** The job's topic. */
  readonly topic: string;
  /** 1 on the first delivery; a retry or a redelivery after a crash counts up. */
  readonly attempt: number;
  /** The delivery after which a failure sends the job to the dead-letter set. */
  readonly maxAttempts: number;
  /** When this delivery was due (Redis server clock). */
  readonly scheduledAt: Date;
  /** When the job was first scheduled (Redis server clock); for a job a call replaced (`replace`, a debounce), that call's time. */
  readonly createdAt: Date;
  /** When this delivery was claimed (Redis server clock): the start a `rateLimit` counts. */
  readonly claimedAt: Date;
  /** The job's group (`schedule(…, { group })`), when it has one. */
  readonly group?: string;
  /**
   * This delivery's fencing token: a decimal string (fits a signed 64-bit column) greater than the
   * token of every earlier delivery of this job (first run, retry, redelivery after a consumer lost
   * its visibility, a job replaced under the same id) and of every earlier claim on the topic
   * (shard), also after Redis lost its data, as long as the Redis server's clock does not go back.
   * Write it with the handler's side effect and refuse older ones, so that a consumer paused past
   * its visibility timeout cannot overwrite the work of the consumer that took the job over:
   *
   * @example
   * \@OnDelayed('order.fulfil')
   * async fulfil(orderId: string, job: JobContext) {
   *   const { rowCount } = await db.query(
   *     'UPDATE orders SET status = $2, fence = $3 WHERE id = $1 AND fence < $3',
   *     [orderId, 'fulfilled', job.fencingToken],
   *   );
   *   if (rowCount === 0) return; // a later delivery of this job (or of another one) wrote first
   * }
   */
  readonly fencingToken: string;
  /**
   * Aborted when the job no longer belongs to this handler (cancelled, replaced, visibility lost:
   * reason `JobVisibilityLostError`) or when shutdown gave up waiting (`ConsumerShutdownTimeoutError`).
   */
  readonly signal: AbortSignal;
  /**
   * Records how far the job got (JSON data, at most 8 KB: a percentage, a few counters), readable
   * with `DelayQueueService.get()` and on the dashboard while the job runs and after (a retry keeps
   * it until the next call). Written only while this delivery still holds the job (claim token
   * checked in Redis): otherwise nothing is written, `signal` is aborted and the promise rejects with
   * `JobVisibilityLostError` (or the signal's reason). Rejects with `InvalidJobError` for a value that
   * is not JSON data. See docs/delayed-jobs.md#results-progress-and-history.
   *
   * @example
   * for (const [i, row] of rows.entries()) {
   *   await importRow(row);
   *   if (i % 100 === 0) await job.progress({ done: i, of: rows.length });
   * }
   */
  progress(value: unknown): Promise<void>;
  /**
   * Appends a line to the job's log, readable with `DelayQueueService.logs(topic, id)` from any
   * instance while the job runs and after: a retry appends to it, and it is kept as long as the job
   * is (a kept completed job, a dead letter) and deleted with it. Bounded: the last 1,000 lines,
   * each cut to its first 2,000 characters. Lines go to Redis in one write per turn of the event
   * loop, before the job's acknowledgement or failure, and only while this delivery still holds the
   * job (claim token checked in Redis): the lines of a delivery that lost its job are dropped. Never
   * throws nor waits because of Redis: a write Redis refuses (an outage) is dropped with a debug
   * log. Throws `InvalidJobError` for a message that is not a string. See docs/delayed-jobs.md#job-logs.
   *
   * @example
   * job.log(`importing ${rows.length} rows`);
   */
  log(message: string): void;
}

/** One per process, shared by both builds of the package (see core/runtime/process-shared.ts). */
const running = processShared('running-job', () => new AsyncLocalStorage<JobContext>());

/**
 * The delivery the current call runs for, from AsyncLocalStorage: available anywhere inside an
 * `@OnDelayed` handler or a `consume()` callback, however deep (a repository several calls down
 * can fence its write without the `job` argument being passed along).
 *
 * @example
 * async markShipped(orderId: string) {
 *   const job = JobContext.current();
 *   const fence = job?.fencingToken ?? '0';
 *   await db.query('UPDATE orders SET shipped = true, fence = $2 WHERE id = $1 AND fence < $2', [orderId, fence]);
 * }
 */
export const JobContext = {
  /** The running delivery's context (the handler's `job` argument), or `undefined` outside any handler. */
  current(): JobContext | undefined {
    return running.getStore();
  },
};

/** Runs a handler with `context` as `JobContext.current()` (the consumer's job runner; not exported from the package). */
export function runInJobContext<R>(context: JobContext, handler: () => R): R {
  return running.run(context, handler);
}

/**
 * A delayed-job handler: resolve to acknowledge, throw (or reject) to retry with backoff. What it
 * resolves to is kept as the job's `result` when its consumer has `keepCompleted`, else ignored.
 *
 * @inline
 */
export type DelayedJobHandler<T = unknown, R = unknown> = (payload: T, job: JobContext) => Promise<R> | R;
