import type {
  JobCancelledEvent,
  JobDeadEvent,
  JobFailedEvent,
  JobLogDroppedEvent,
  JobProgressEvent,
  JobRateLimitedEvent,
  JobRecoveredEvent,
  JobRetriedEvent,
  JobScheduledEvent,
  JobScheduleLostEvent,
  JobScheduleRetryingEvent,
  JobStartedEvent,
  JobSucceededEvent,
  OutboxRelayedEvent,
  OutboxRelayFailedEvent,
  OutboxRowParkedEvent,
} from './job-events.js';
import type { LockAcquiredEvent, LockLostEvent, LockReleasedEvent, LockTimeoutEvent } from './lock-events.js';
import type {
  LeadershipAcquiredEvent,
  LeadershipLostEvent,
  OneInstanceAcquiredEvent,
  OneInstanceLostEvent,
  OneInstanceSkippedEvent,
} from './scheduling-events.js';

/**
 * The events of `RedisLockEvents` and of the `diagnostics_channel` channels, by name: each maps to the
 * one payload object its listeners and subscribers get. Name a payload through it
 * (`RedisLockEventMap['lock.lost']`); the payload types have no names of their own.
 *
 * @example
 * events.on('job.dead', ({ topic, id, error }) => alerts.page(`${topic}/${id}: ${error}`));
 *
 * function onLockLost(event: RedisLockEventMap['lock.lost']) {
 *   console.error(`lost ${event.key}#${event.fencingToken}: ${event.error.message}`);
 * }
 */
export interface RedisLockEventMap {
  /** A lock was taken. */
  'lock.acquired': LockAcquiredEvent;
  /** A hold ended by `release()`. */
  'lock.released': LockReleasedEvent;
  /** A held lock's lease was lost. */
  'lock.lost': LockLostEvent;
  /** A lock was not free in time. */
  'lock.timeout': LockTimeoutEvent;
  /** A job was written to Redis. */
  'job.scheduled': JobScheduledEvent;
  /** A handler began running a delivery. */
  'job.started': JobStartedEvent;
  /** A handler resolved. */
  'job.succeeded': JobSucceededEvent;
  /** A handler threw or rejected. */
  'job.failed': JobFailedEvent;
  /** A handler's `JobContext.progress()` was recorded. */
  'job.progress': JobProgressEvent;
  /** A handler's job was cancelled while it ran (instead of succeeded or failed). */
  'job.cancelled': JobCancelledEvent;
  /** A failed job was put back with backoff. */
  'job.retried': JobRetriedEvent;
  /** A failed job went to the dead letters. */
  'job.dead': JobDeadEvent;
  /** A handler threw JobRateLimitedError: the job went back, the topic's claims wait. */
  'job.rate-limited': JobRateLimitedEvent;
  /** Lines a handler logged with `JobContext.log()` whose write Redis did not confirm: not sent again. */
  'job.log.dropped': JobLogDroppedEvent;
  /** A job whose consumer went silent was taken back. */
  'job.recovered': JobRecoveredEvent;
  /** Jobs of a committed transaction could not be written to Redis yet; retried. */
  'job.schedule.retrying': JobScheduleRetryingEvent;
  /** Jobs of a committed transaction were never written to Redis: alert. */
  'job.schedule.lost': JobScheduleLostEvent;
  /** Outbox rows were written to Redis. */
  'outbox.relayed': OutboxRelayedEvent;
  /** Outbox rows could not be written to Redis; retried. */
  'outbox.relay.failed': OutboxRelayFailedEvent;
  /** An outbox row that can never be relayed was parked. */
  'outbox.row.parked': OutboxRowParkedEvent;
  /** This instance became a leader. */
  'leadership.acquired': LeadershipAcquiredEvent;
  /** This instance stopped being a leader. */
  'leadership.lost': LeadershipLostEvent;
  /** This instance took an `@OnOneInstance` lease. */
  'one-instance.acquired': OneInstanceAcquiredEvent;
  /** This instance no longer holds an `@OnOneInstance` lease. */
  'one-instance.lost': OneInstanceLostEvent;
  /** A call of an `@OnOneInstance` method was skipped here. */
  'one-instance.skipped': OneInstanceSkippedEvent;
}

/** Every event name of `RedisLockEventMap`. */
export type RedisLockEventName = keyof RedisLockEventMap;

/**
 * The listener arguments of each event (its payload, alone): the type argument of `RedisLockEvents`' `EventEmitter`.
 */
export type RedisLockEventArgs = { [K in RedisLockEventName]: [event: RedisLockEventMap[K]] };
