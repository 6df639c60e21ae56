import { EventEmitter } from 'node:events';
import { Injectable, Logger } from '@nestjs/common';
import type { LockLostError } from '../errors/lock-lost.error.js';
import type { RedisLockError } from '../errors/redis-lock.error.js';
import { channelOf, redisLockChannel } from './redis-lock.channels.js';

/** A lock was taken (`lock.acquired`). One event per key: a multi-key lock emits one for each of its keys. */
export interface LockAcquiredEvent {
  /** The name the caller gave (the key of a mutex, read/write lock or semaphore), never the Redis key. */
  readonly key: string;
  /** The caller's `keyPattern` (`@WithLock`: its key template), if any: a low-cardinality name for the key. */
  readonly keyPattern?: string;
  /** The hold's fencing token (see `LockHandle.fencingToken`). */
  readonly fencingToken: string;
  /** Time from the call to the lock being held (monotonic clock), including every wait. */
  readonly waitMs: number;
}

/** A hold ended by `release()` (`lock.released`); inside a transaction, when the transaction ended. */
export interface LockReleasedEvent {
  /** The name the caller gave, as in `LockAcquiredEvent`. */
  readonly key: string;
  /** As in `LockAcquiredEvent`; known only under the same condition as `holdMs`. */
  readonly keyPattern?: string;
  /** The hold's fencing token (see `LockHandle.fencingToken`). */
  readonly fencingToken: string;
  /**
   * Time the lock was held. Measured only when someone listened to `lock.released` or `lock.lost`
   * at the moment the lock was taken (subscribe at startup); otherwise `undefined`.
   */
  readonly holdMs: number | undefined;
}

/** A held lock's lease was lost (`lock.lost`); its handle's signal has been aborted with `error`. */
export interface LockLostEvent {
  /** The name the caller gave, as in `LockAcquiredEvent`. */
  readonly key: string;
  /** As in `LockAcquiredEvent`; known only under the same condition as `holdMs`. */
  readonly keyPattern?: string;
  /** The hold's fencing token (see `LockHandle.fencingToken`). Writes fenced with it are now refused. */
  readonly fencingToken: string;
  /** The error the handle's `signal` was aborted with (its `reason` says why the lease was lost). */
  readonly error: LockLostError;
  /** Time from acquisition to the loss; `undefined` under the same condition as `LockReleasedEvent.holdMs`. */
  readonly holdMs: number | undefined;
}

/**
 * A lock was not free in time (`lock.timeout`): `acquire()` rejected with `LockAcquireTimeoutError`,
 * or `tryAcquire()` resolved `null` (then `waitTimeout` is 0).
 */
export interface LockTimeoutEvent {
  /** The key that could not be taken (for a multi-key lock: the first key of the sorted set that was not free). */
  readonly key: string;
  /** As in `LockAcquiredEvent`. */
  readonly keyPattern?: string;
  /** The `waitTimeout` the call gave (ms); 0 for `tryAcquire()`. */
  readonly waitTimeout: number;
  /** Time actually spent before giving up. */
  readonly waitMs: number;
}

/** A job was written to Redis (`job.scheduled`); inside a transaction, after the commit. */
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
}

/** A handler began running a delivery (`job.started`). */
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

/** A handler resolved (`job.succeeded`); the acknowledgement is sent right after. */
export interface JobSucceededEvent {
  /** The topic of the job. */
  readonly topic: string;
  /** The job id (given to `schedule()`, or generated). */
  readonly id: string;
  /** The attempt that succeeded: 1 on the first delivery. */
  readonly attempt: number;
  /** The handler's run time (monotonic clock). */
  readonly runMs: number;
}

/** A handler threw or rejected (`job.failed`); `job.retried` or `job.dead` follows once Redis recorded it. */
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

/** A failed job was put back with backoff (`job.retried`). */
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

/** A failed job went to the dead-letter set after its last attempt (`job.dead`). */
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

/** This instance became the leader of a `@LeaderElection` key (`leadership.acquired`). */
export interface LeadershipAcquiredEvent {
  /** The `@LeaderElection` key. */
  readonly key: string;
  /** The elected provider's class name. */
  readonly provider: string;
  /** The leader lock's fencing token: grows with every new term, so it orders the terms. */
  readonly fencingToken: string;
}

/**
 * This instance stopped being the leader (`leadership.lost`): it stepped down (`'stepped-down'`:
 * shutdown or `lock.release()`), or its lease was lost (`'lease-lost'`: expired, taken over, or
 * Redis unreachable until it ran out). The lock's `signal` has been aborted with `error`.
 */
export interface LeadershipLostEvent {
  /** The `@LeaderElection` key. */
  readonly key: string;
  /** The elected provider's class name. */
  readonly provider: string;
  /** The fencing token of the term that ended. */
  readonly fencingToken: string;
  /**
   * `'stepped-down'` (shutdown or `lock.release()`) or `'lease-lost'` (expired, taken over, or Redis unreachable until it ran out).
   */
  readonly reason: 'stepped-down' | 'lease-lost';
  /** The error the term's `signal` was aborted with. */
  readonly error: RedisLockError;
  /** How long the term lasted (monotonic clock). */
  readonly heldMs: number;
}

/** This instance took the lease of an `@OnOneInstance` method (`one-instance.acquired`): its calls run here now. */
export interface OneInstanceAcquiredEvent {
  /** The lease key of the `@OnOneInstance` method. */
  readonly key: string;
  /** The lease's fencing token: grows with every new holder. */
  readonly fencingToken: string;
}

/**
 * This instance no longer holds an `@OnOneInstance` lease (`one-instance.lost`): handed back at
 * shutdown (`'handed-back'`), or lost (`'lease-lost'`).
 */
export interface OneInstanceLostEvent {
  /** The lease key of the `@OnOneInstance` method. */
  readonly key: string;
  /** The fencing token of the lease that ended. */
  readonly fencingToken: string;
  /** `'handed-back'` at shutdown, or `'lease-lost'`. */
  readonly reason: 'handed-back' | 'lease-lost';
  /** How long this instance held the lease (monotonic clock). */
  readonly heldMs: number;
}

/**
 * A call of an `@OnOneInstance` method was skipped here, without running (`one-instance.skipped`):
 * another instance holds the method's lease (`'not-owner'`), or a run of it is still going, on this
 * instance or on the previous holder (`'still-running'`). Calls skipped because the application is
 * shutting down emit nothing.
 */
export interface OneInstanceSkippedEvent {
  /** The lease key of the `@OnOneInstance` method. */
  readonly key: string;
  /** `ClassName.methodName` of the call that was skipped. */
  readonly method: string;
  /** `'not-owner'`: another instance holds the lease; `'still-running'`: a run of the method is still going. */
  readonly reason: 'not-owner' | 'still-running';
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

/**
 * Payloads of the events emitted by `RedisLockEvents` (event name -> listener arguments): each
 * listener gets one payload object.
 *
 * @example
 * events.on('job.dead', ({ topic, id, error }) => alerts.page(`${topic}/${id}: ${error}`));
 */
export interface RedisLockEventMap {
  /** A lock was taken. */
  'lock.acquired': [event: LockAcquiredEvent];
  /** A hold ended by `release()`. */
  'lock.released': [event: LockReleasedEvent];
  /** A held lock's lease was lost. */
  'lock.lost': [event: LockLostEvent];
  /** A lock was not free in time. */
  'lock.timeout': [event: LockTimeoutEvent];
  /** A job was written to Redis. */
  'job.scheduled': [event: JobScheduledEvent];
  /** A handler began running a delivery. */
  'job.started': [event: JobStartedEvent];
  /** A handler resolved. */
  'job.succeeded': [event: JobSucceededEvent];
  /** A handler threw or rejected. */
  'job.failed': [event: JobFailedEvent];
  /** A failed job was put back with backoff. */
  'job.retried': [event: JobRetriedEvent];
  /** A failed job went to the dead letters. */
  'job.dead': [event: JobDeadEvent];
  /** A job whose consumer went silent was taken back. */
  'job.recovered': [event: JobRecoveredEvent];
  /** Jobs of a committed transaction could not be written to Redis yet; retried. */
  'job.schedule.retrying': [event: JobScheduleRetryingEvent];
  /** Jobs of a committed transaction were never written to Redis: alert. */
  'job.schedule.lost': [event: JobScheduleLostEvent];
  /** Outbox rows were written to Redis. */
  'outbox.relayed': [event: OutboxRelayedEvent];
  /** Outbox rows could not be written to Redis; retried. */
  'outbox.relay.failed': [event: OutboxRelayFailedEvent];
  /** An outbox row that can never be relayed was parked. */
  'outbox.row.parked': [event: OutboxRowParkedEvent];
  /** This instance became a leader. */
  'leadership.acquired': [event: LeadershipAcquiredEvent];
  /** This instance stopped being a leader. */
  'leadership.lost': [event: LeadershipLostEvent];
  /** This instance took an `@OnOneInstance` lease. */
  'one-instance.acquired': [event: OneInstanceAcquiredEvent];
  /** This instance no longer holds an `@OnOneInstance` lease. */
  'one-instance.lost': [event: OneInstanceLostEvent];
  /** A call of an `@OnOneInstance` method was skipped here. */
  'one-instance.skipped': [event: OneInstanceSkippedEvent];
}

/** Every event name of `RedisLockEventMap`. */
export type RedisLockEventName = keyof RedisLockEventMap;

/**
 * Typed event stream of the module: lock and job life cycles, for logs, metrics and alerts.
 * Inject it and subscribe. Every event is also published, as the same payload object, on its
 * `node:diagnostics_channel` channel (`nestjs-redis-lock:<event>`, see `REDIS_LOCK_CHANNELS`),
 * where instrumentation can subscribe without Nest's injector. A channel is process-wide: it
 * carries the events of every application in the process, while this emitter carries only its
 * own application's.
 *
 * Emitters check `wants(event)` first, so an event that no listener and no channel subscriber
 * wants costs neither a payload nor a clock read. Listeners and subscribers run synchronously on
 * the library's path: keep them quick, and do not throw. A listener's exception is caught and
 * logged, never rethrown into a lock or job; a channel subscriber's exception does not reach the
 * lock or job either, but Node itself re-raises it as an `uncaughtException` on the next tick
 * (the rule of every `diagnostics_channel`), which ends the process unless the application
 * handles that event.
 *
 * @example
 * constructor(events: RedisLockEvents) {
 *   events.on('lock.lost', ({ key, error }) => this.logger.error(`lost ${key}: ${error.message}`));
 *   events.on('job.dead', ({ topic, id, error }) => this.alerts.page(`${topic}/${id}: ${error}`));
 * }
 */
@Injectable()
export class RedisLockEvents extends EventEmitter<RedisLockEventMap> {
  constructor() {
    // captureRejections: an async listener's rejection becomes an 'error' event instead of an
    // unhandled rejection; the 'error' listener below logs it.
    super({ captureRejections: true });
    this.on('error' as never, ((error: unknown) => reportListenerError(error)) as never);
  }

  /**
   * True when at least one listener of this emitter, or one subscriber of the event's
   * `diagnostics_channel` channel, wants `event`; emitters test it before building a payload.
   */
  wants(event: RedisLockEventName): boolean {
    return this.listenerCount(event) > 0 || redisLockChannel(event).hasSubscribers;
  }

  /** Emits `event` with the payload `build()` returns, building it only when someone wants it. */
  emitIfWanted<K extends RedisLockEventName>(event: K, build: () => RedisLockEventMap[K][0]): void {
    if (this.wants(event)) this.emit(event, ...([build()] as RedisLockEventMap[K]));
  }

  /**
   * Emits to the listeners, then publishes the same payload on the event's channel, without
   * letting a listener's exception escape into the caller (a metrics listener that throws must
   * not fail a lock release or a job acknowledgement) nor keep the event from the channel.
   */
  override emit<K extends RedisLockEventName>(event: K, ...args: RedisLockEventMap[K]): boolean {
    let delivered: boolean;
    try {
      delivered = (EventEmitter.prototype.emit as (event: string, ...args: unknown[]) => boolean).call(this, event, ...args);
    } catch (error) {
      reportListenerError(error, event);
      delivered = true;
    }
    // undefined for the emitter's own 'error' / 'newListener' / 'removeListener' events.
    const target = channelOf(event);
    if (target?.hasSubscribers) {
      // Node's publish() catches a subscriber's exception itself (and re-raises it on the next
      // tick, out of our reach); the catch is for a runtime whose publish() throws instead.
      try {
        target.publish(args[0]);
      } catch (error) {
        reportListenerError(error, event, 'channel subscriber');
      }
      delivered = true;
    }
    return delivered;
  }
}

function reportListenerError(error: unknown, event?: string | symbol, who = 'listener'): void {
  new Logger('RedisLockEvents').error(
    `A ${who}${event ? ` of ${String(event)}` : ''} threw; the event's source carried on: ${(error as Error)?.stack ?? error}`,
  );
}
