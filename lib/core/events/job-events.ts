/**
 * A job was written to Redis (`job.scheduled`); inside a transaction, after the commit.
 */
export interface JobScheduledEvent {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id (given to `schedule()`, or generated). */
  readonly id: string;
  /** `delay` (ms from the Redis clock) or `at` (epoch ms), as requested. */
  readonly delayMs?: number;
  /** The due time as requested with `at` (epoch ms), when `at` was given. */
  readonly at?: number;
  /** True when scheduled with `replace: true`. An id that already existed without `replace` keeps the first job. */
  readonly replace: boolean;
  /**
   * What the write did: `'created'` a new job, `'existing'` kept the job that already had this id
   * (a duplicate: nothing new was scheduled), `'replaced'` replaced it. Absent when not known (a
   * batch written after a commit by the retry loop).
   */
  readonly status?: 'created' | 'existing' | 'replaced';
}

/**
 * A handler began running a delivery (`job.started`).
 */
export interface JobStartedEvent {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id (given to `schedule()`, or generated). */
  readonly id: string;
  /** 1 on the first delivery. */
  readonly attempt: number;
  /** How long after its due time the handler started (Redis clock, estimated locally; never negative). */
  readonly latenessMs: number;
}

/**
 * A handler resolved (`job.succeeded`); the acknowledgement is sent right after. `Result` is the
 * result's type: `unknown` here, the `Topic` token's result type in an `@OnJobEvent(topic, 'completed')` listener.
 */
export interface JobSucceededEvent<Result = unknown> {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id (given to `schedule()`, or generated). */
  readonly id: string;
  /** The attempt that succeeded: 1 on the first delivery. */
  readonly attempt: number;
  /** The handler's run time (monotonic clock). */
  readonly runMs: number;
  /** What the handler resolved to, untouched (the same object, whether or not it is kept as the job's result). */
  readonly result: Result;
}

/**
 * A handler recorded its progress with `JobContext.progress(value)` and Redis took it (`job.progress`),
 * on the instance running the handler. Not emitted when the write was refused (the job was no longer
 * this delivery's) or failed.
 */
export interface JobProgressEvent {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id (given to `schedule()`, or generated). */
  readonly id: string;
  /** The attempt that is running. */
  readonly attempt: number;
  /** The value passed to `progress()`, untouched. */
  readonly progress: unknown;
}

/**
 * A handler whose job was cancelled while it ran (`DelayQueueService.cancel()`, from any instance)
 * returned or threw (`job.cancelled`). Reported instead of `job.succeeded` / `job.failed`: the job
 * is gone, not retried and not dead-lettered, whatever the handler did after its signal aborted.
 */
export interface JobCancelledEvent {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id (given to `schedule()`, or generated). */
  readonly id: string;
  /** The attempt that was running. */
  readonly attempt: number;
  /** The handler's run time until it returned or threw (monotonic clock). */
  readonly runMs: number;
}

/**
 * A handler threw or rejected (`job.failed`); `job.retried` or `job.dead` follows once Redis recorded it.
 */
export interface JobFailedEvent {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id (given to `schedule()`, or generated). */
  readonly id: string;
  /** The attempt that failed: 1 on the first delivery. */
  readonly attempt: number;
  /** The handler's run time until it threw or rejected (monotonic clock). */
  readonly runMs: number;
  /** What the handler threw, untouched. */
  readonly error: unknown;
}

/**
 * A failed job was put back with backoff (`job.retried`).
 */
export interface JobRetriedEvent {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id (given to `schedule()`, or generated). */
  readonly id: string;
  /** The attempt that failed. */
  readonly attempt: number;
  /** The job's `maxAttempts` (deliveries in all). */
  readonly maxAttempts: number;
  /** Backoff before the next delivery. */
  readonly delayMs: number;
  /** The recorded failure message. */
  readonly error: string;
}

/**
 * A failed job went to the dead-letter set after its last attempt (`job.dead`), or at once because
 * its handler threw `UnrecoverableJobError` (`unrecoverable: true`).
 */
export interface JobDeadEvent {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id (given to `schedule()`, or generated). */
  readonly id: string;
  /** The last attempt, which failed. */
  readonly attempt: number;
  /** The job's `maxAttempts` (deliveries in all). */
  readonly maxAttempts: number;
  /** The recorded failure message of the last attempt. */
  readonly error: string;
  /** True when the handler threw `UnrecoverableJobError` (the job was not retried, whatever attempts it had left). */
  readonly unrecoverable?: boolean;
}

/**
 * A handler threw `JobRateLimitedError` (`job.rate-limited`): the job is back in the queue without
 * spending its attempt, and no job of its topic is claimed until `blockedUntilMs`.
 */
export interface JobRateLimitedEvent {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id (given to `schedule()`, or generated). */
  readonly id: string;
  /** The attempt that was rate limited (not counted: the next delivery has the same number). */
  readonly attempt: number;
  /** The wait the handler asked for. */
  readonly retryAfterMs: number;
  /** When the topic's block ends, in Redis server ms (a longer block already in place stays). */
  readonly blockedUntilMs: number;
}

/**
 * Lines a handler logged with `JobContext.log()` whose write Redis did not confirm (unreachable, or no
 * answer in time): they are not sent again, the handler goes on. Most often Redis never got them; a
 * write that reached Redis and lost its reply is in the log all the same. Counted by
 * `redis_lock_job_log_lines_dropped_total`.
 */
export interface JobLogDroppedEvent {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id. */
  readonly id: string;
  /** How many lines the unconfirmed write carried. */
  readonly lines: number;
  /** Why the write was not confirmed. */
  readonly error: unknown;
}

/**
 * A job whose consumer crashed, stalled or lost Redis was taken back after its visibility deadline
 * passed (`job.recovered`), by whichever live consumer of the topic claimed next: put back in the
 * queue (`requeued: true`), or buried with the dead letters when that was its last attempt (then
 * `job.dead` follows).
 */
export interface JobRecoveredEvent {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id (given to `schedule()`, or generated). */
  readonly id: string;
  /** The attempt that was running when its consumer went silent. */
  readonly attempt: number;
  /** The job's `maxAttempts` (deliveries in all). */
  readonly maxAttempts: number;
  /** True when the job was put back in the queue; false when it was buried with the dead letters. */
  readonly requeued: boolean;
}

/**
 * Jobs scheduled inside a transaction that committed could not be written to Redis
 * (`job.schedule.retrying`): the write is retried with backoff (capped at 10 s, with jitter) for as
 * long as the process runs, and flushed at shutdown until `delayQueue.shutdownTimeout`. One event
 * per failed attempt of one batch (one `schedule()`, or one `scheduleMany()` group).
 */
export interface JobScheduleRetryingEvent {
  /** The topic of the batch. */
  readonly topic: string;
  /** The ids of the jobs of the batch (fixed before the first attempt, so a retry cannot duplicate a job). */
  readonly ids: readonly string[];
  /** The attempt that failed: 1 for the write right after the commit. */
  readonly attempt: number;
  /** Backoff before the next attempt. */
  readonly retryInMs: number;
  /** The failure message of this attempt. */
  readonly error: string;
}

/**
 * Jobs scheduled inside a transaction that committed were never confirmed written to Redis
 * (`job.schedule.lost`): Redis stayed unreachable until the shutdown deadline, or the transaction
 * committed after the module had shut down. Their transaction's data is committed but the jobs will
 * not run unless scheduled again: alert on this event. Also logged as an error with the ids.
 */
export interface JobScheduleLostEvent {
  /** The topic of the batch. */
  readonly topic: string;
  /** The ids of the jobs that were not written. */
  readonly ids: readonly string[];
  /** UTF-8 bytes of the jobs' payloads (JSON), summed. */
  readonly payloadBytes: number;
  /** Write attempts made. */
  readonly attempts: number;
  /** Why the last attempt failed (or why none could be made). */
  readonly error: string;
}

/**
 * Jobs of committed transactions went from the transactional outbox to Redis (`outbox.relayed`):
 * right after COMMIT by the process that committed them (`'after-commit'`), or by a relay that
 * found rows left behind by a crash or a Redis outage (`'relay'`).
 */
export interface OutboxRelayedEvent {
  /**
   * `'after-commit'`: written right after COMMIT by the process that committed; `'relay'`: by the relay, from rows left behind.
   */
  readonly source: 'after-commit' | 'relay';
  /** Rows written to Redis and deleted from the outbox. */
  readonly rows: number;
  /** Time from the start of the write to the rows' deletion (monotonic clock). */
  readonly durationMs: number;
}

/**
 * Outbox rows could not be written to Redis (`outbox.relay.failed`); they stay in the outbox and
 * the relay retries with backoff. Nothing is lost: alert when it lasts.
 */
export interface OutboxRelayFailedEvent {
  /**
   * `'after-commit'`: written right after COMMIT by the process that committed; `'relay'`: by the relay, from rows left behind.
   */
  readonly source: 'after-commit' | 'relay';
  /** Rows that could not be written (they stay in the outbox). */
  readonly rows: number;
  /** Consecutive failed looks of the relay (1 for a failed write right after COMMIT). */
  readonly attempt: number;
  /** When the relay looks again (for `'after-commit'`: within the relay's next look). */
  readonly retryInMs: number;
  /** The failure message. */
  readonly error: string;
}

/**
 * An outbox row that can never be relayed (undecodable, a topic or id this version refuses, or a
 * write Redis keeps refusing) was moved aside (`outbox.row.parked`): it stays in the outbox table,
 * marked parked with the reason, and is not retried. Alert on it; fix and un-park by hand.
 */
export interface OutboxRowParkedEvent {
  /** The outbox row's id (its primary key). */
  readonly rowId: string;
  /** The topic of the row's job. */
  readonly topic: string;
  /** The id of the row's job. */
  readonly jobId: string;
  /** Why the row can never be relayed (also stored on the row). */
  readonly reason: string;
}
