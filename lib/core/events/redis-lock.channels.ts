import { channel, type Channel } from 'node:diagnostics_channel';
import type { RedisLockEventName } from './redis-lock-event-map.js';

/**
 * The `node:diagnostics_channel` channel name of every `RedisLockEvents` event:
 * `nestjs-redis-lock:<event>` (the package name, then the event name unchanged), as the official
 * Nest packages name theirs `nestjs:locks:<event>`, `nestjs:outbox:<event>`.
 *
 * Each channel carries the very payload object the `RedisLockEvents` listeners get (see
 * `RedisLockEventMap` for its type). A channel is process-wide: when several Nest applications
 * (or several `RedisLockModule` instances) run in one process, all their events arrive on the same
 * channel and nothing in the message says which one sent it; use the injected `RedisLockEvents`
 * of one application for a per-application stream.
 *
 * @example
 * import { subscribe } from 'node:diagnostics_channel';
 * import { REDIS_LOCK_CHANNELS, type RedisLockEventMap } from 'nestjs-redis-lock';
 *
 * subscribe(REDIS_LOCK_CHANNELS['lock.lost'], (message) => {
 *   const { key, fencingToken } = message as RedisLockEventMap['lock.lost'];
 *   console.error(`lost ${key}#${fencingToken}`);
 * });
 */
export const REDIS_LOCK_CHANNELS = Object.freeze({
  'lock.acquired': 'nestjs-redis-lock:lock.acquired',
  'lock.released': 'nestjs-redis-lock:lock.released',
  'lock.lost': 'nestjs-redis-lock:lock.lost',
  'lock.timeout': 'nestjs-redis-lock:lock.timeout',
  'job.scheduled': 'nestjs-redis-lock:job.scheduled',
  'job.started': 'nestjs-redis-lock:job.started',
  'job.succeeded': 'nestjs-redis-lock:job.succeeded',
  'job.failed': 'nestjs-redis-lock:job.failed',
  'job.progress': 'nestjs-redis-lock:job.progress',
  'job.cancelled': 'nestjs-redis-lock:job.cancelled',
  'job.retried': 'nestjs-redis-lock:job.retried',
  'job.dead': 'nestjs-redis-lock:job.dead',
  'job.rate-limited': 'nestjs-redis-lock:job.rate-limited',
  'job.log.dropped': 'nestjs-redis-lock:job.log.dropped',
  'job.recovered': 'nestjs-redis-lock:job.recovered',
  'job.schedule.retrying': 'nestjs-redis-lock:job.schedule.retrying',
  'job.schedule.lost': 'nestjs-redis-lock:job.schedule.lost',
  'outbox.relayed': 'nestjs-redis-lock:outbox.relayed',
  'outbox.relay.failed': 'nestjs-redis-lock:outbox.relay.failed',
  'outbox.row.parked': 'nestjs-redis-lock:outbox.row.parked',
  'leadership.acquired': 'nestjs-redis-lock:leadership.acquired',
  'leadership.lost': 'nestjs-redis-lock:leadership.lost',
  'one-instance.acquired': 'nestjs-redis-lock:one-instance.acquired',
  'one-instance.lost': 'nestjs-redis-lock:one-instance.lost',
  'one-instance.skipped': 'nestjs-redis-lock:one-instance.skipped',
} as const satisfies { readonly [K in RedisLockEventName]: `nestjs-redis-lock:${K}` });

// Created once, at import: the emitter tests `hasSubscribers` on every event of the library's hot
// paths, and `diagnostics_channel.channel(name)` would be a lookup by name each time.
const channels = new Map<string | symbol, Channel>(Object.entries(REDIS_LOCK_CHANNELS).map(([event, name]) => [event, channel(name)]));

/**
 * The `diagnostics_channel` `Channel` object of `event` (the same object as
 * `diagnostics_channel.channel(REDIS_LOCK_CHANNELS[event])`), created once. Users subscribe by
 * `REDIS_LOCK_CHANNELS`; the emitter and the specs use this.
 *
 * @example
 * const acquired = redisLockChannel('lock.acquired');
 * acquired.subscribe(onAcquired);
 * // ...
 * acquired.unsubscribe(onAcquired);
 */
export function redisLockChannel(event: RedisLockEventName): Channel {
  return channels.get(event)!;
}

/** The channel of `event`, or `undefined` for a name that is not a `RedisLockEventName` (`'error'`, `'newListener'`). Internal. */
export function channelOf(event: string | symbol): Channel | undefined {
  return channels.get(event);
}
