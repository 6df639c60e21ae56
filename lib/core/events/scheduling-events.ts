import type { RedisLockError } from '../errors/redis-lock.error.js';

/**
 * This instance became the leader of a `@LeaderElection` key (`leadership.acquired`).
 */
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

/**
 * This instance took the lease of an `@OnOneInstance` method (`one-instance.acquired`): its calls run here now.
 */
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
 * another instance holds the method's lease, or this one cannot reach Redis to take or confirm it
 * (`'not-owner'`), or a run of it is still going, on this
 * instance or on the previous holder (`'still-running'`). Calls skipped because the application is
 * shutting down emit nothing.
 */
export interface OneInstanceSkippedEvent {
  /** The lease key of the `@OnOneInstance` method. */
  readonly key: string;
  /** `ClassName.methodName` of the call that was skipped. */
  readonly method: string;
  /** `'not-owner'`: another instance holds the lease (or Redis is out of reach); `'still-running'`: a run of the method is still going. */
  readonly reason: 'not-owner' | 'still-running';
}
