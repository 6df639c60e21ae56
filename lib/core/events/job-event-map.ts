import type { JobCancelledEvent, JobDeadEvent, JobFailedEvent, JobProgressEvent, JobSucceededEvent } from './job-events.js';
import type { RedisLockEventName } from './redis-lock-event-map.js';

/**
 * The events `@OnJobEvent(topic, event)` listens to, by name, each with the payload its method gets
 * (`Result`: the `Topic` token's result type, `unknown` for a plain name). Each is a `RedisLockEvents`
 * event of the instance where the outcome happened, for one topic:
 *
 * - `completed`: `job.succeeded`, the handler resolved here (with its `result`);
 * - `failed`: `job.failed`, the handler threw here (a retry or the dead letters follow);
 * - `dead`: `job.dead`, the job went to the dead letters here (after its last attempt failed here, or
 *   when this instance took it back from a consumer that went silent on its last attempt);
 * - `cancelled`: `job.cancelled`, the job was cancelled (from any instance) while its handler ran
 *   here, and the handler has returned;
 * - `progress`: `job.progress`, the handler running here recorded its progress.
 *
 * @example
 * \@OnJobEvent(orderExpire, 'completed')
 * expired(event: JobEventMap<{ expired: boolean }>['completed']) { ... }
 */
export interface JobEventMap<Result = unknown> {
  /** The handler resolved on this instance (`job.succeeded`). */
  completed: JobSucceededEvent<Result>;
  /** The handler threw or rejected on this instance (`job.failed`). */
  failed: JobFailedEvent;
  /** The job went to the dead letters on this instance (`job.dead`). */
  dead: JobDeadEvent;
  /** The job was cancelled while its handler ran on this instance (`job.cancelled`). */
  cancelled: JobCancelledEvent;
  /** The handler running on this instance recorded its progress (`job.progress`). */
  progress: JobProgressEvent;
}

/** The `RedisLockEvents` event each `@OnJobEvent` event is (see `JobEventMap`). Internal. */
export const JOB_EVENT_SOURCES = Object.freeze({
  completed: 'job.succeeded',
  failed: 'job.failed',
  dead: 'job.dead',
  cancelled: 'job.cancelled',
  progress: 'job.progress',
} as const satisfies { readonly [K in keyof JobEventMap]: RedisLockEventName });
