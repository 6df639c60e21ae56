/** What a delayed-job handler learns about the delivery it is running: `(payload, job) => ...`. */
export interface JobContext {
  readonly id: string;
  readonly topic: string;
  /** 1 on the first delivery; a retry or a redelivery after a crash counts up. */
  readonly attempt: number;
  /** The delivery after which a failure sends the job to the dead-letter set. */
  readonly maxAttempts: number;
  /** When this delivery was due (Redis server clock). */
  readonly scheduledAt: Date;
  /** When the job was first scheduled (Redis server clock). */
  readonly createdAt: Date;
  /**
   * Aborted when the job no longer belongs to this handler (cancelled, replaced, visibility lost:
   * reason `JobVisibilityLostError`) or when shutdown gave up waiting (`ConsumerShutdownTimeoutError`).
   */
  readonly signal: AbortSignal;
}

/** A delayed-job handler: resolve to acknowledge, throw (or reject) to retry with backoff. */
export type DelayedJobHandler<T = unknown> = (payload: T, job: JobContext) => Promise<void> | void;
