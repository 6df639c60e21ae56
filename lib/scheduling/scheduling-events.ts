import { channel, type Channel } from 'node:diagnostics_channel';
import type { EventEmitter } from 'node:events';
import type { RedisLockEvents } from '../core/events/redis-lock-events.js';
import type { RedisLockError } from '../core/errors/redis-lock.error.js';

/** This instance became the leader of a `@LeaderElection` key (`leadership.acquired`). */
export interface LeadershipAcquiredEvent {
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
  readonly key: string;
  readonly provider: string;
  readonly fencingToken: string;
  readonly reason: 'stepped-down' | 'lease-lost';
  readonly error: RedisLockError;
  /** How long the term lasted (monotonic clock). */
  readonly heldMs: number;
}

/** This instance took the lease of an `@OnOneInstance` method (`one-instance.acquired`): its calls run here now. */
export interface OneInstanceAcquiredEvent {
  readonly key: string;
  readonly fencingToken: string;
}

/**
 * This instance no longer holds an `@OnOneInstance` lease (`one-instance.lost`): handed back at
 * shutdown (`'handed-back'`), or lost (`'lease-lost'`).
 */
export interface OneInstanceLostEvent {
  readonly key: string;
  readonly fencingToken: string;
  readonly reason: 'handed-back' | 'lease-lost';
  readonly heldMs: number;
}

/** Payloads of the scheduling events, emitted on `RedisLockEvents` (event name -> listener arguments). */
export interface SchedulingEventMap {
  'leadership.acquired': [event: LeadershipAcquiredEvent];
  'leadership.lost': [event: LeadershipLostEvent];
  'one-instance.acquired': [event: OneInstanceAcquiredEvent];
  'one-instance.lost': [event: OneInstanceLostEvent];
}

export type SchedulingEventName = keyof SchedulingEventMap;

/**
 * The `node:diagnostics_channel` channel of each scheduling event, named like the other events of
 * the library (`nestjs-redis-lock:<event>`).
 */
export const SCHEDULING_CHANNELS = Object.freeze({
  'leadership.acquired': 'nestjs-redis-lock:leadership.acquired',
  'leadership.lost': 'nestjs-redis-lock:leadership.lost',
  'one-instance.acquired': 'nestjs-redis-lock:one-instance.acquired',
  'one-instance.lost': 'nestjs-redis-lock:one-instance.lost',
} as const satisfies { readonly [K in SchedulingEventName]: `nestjs-redis-lock:${K}` });

const channels = new Map<string, Channel>(Object.entries(SCHEDULING_CHANNELS).map(([event, name]) => [event, channel(name)]));

/**
 * Emits a scheduling event on the application's `RedisLockEvents` (so `events.on('leadership.lost', …)`
 * works like any other event of the module) and on its diagnostics channel. Builds the payload only
 * when someone listens. `RedisLockEvents.emit` catches and logs a listener's exception.
 */
export function emitSchedulingEvent<K extends SchedulingEventName>(
  events: RedisLockEvents,
  event: K,
  payload: () => SchedulingEventMap[K][0],
): void {
  const emitter = events as unknown as EventEmitter;
  const target = channels.get(event)!;
  if (emitter.listenerCount(event) === 0 && !target.hasSubscribers) return;
  const message = payload();
  emitter.emit(event, message);
  if (target.hasSubscribers) target.publish(message);
}
