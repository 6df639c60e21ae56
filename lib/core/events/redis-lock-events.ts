import { EventEmitter } from 'node:events';
import { Injectable, Logger } from '@nestjs/common';
import { channelOf, redisLockChannel } from './redis-lock.channels.js';
import type { RedisLockEventArgs, RedisLockEventMap, RedisLockEventName } from './redis-lock-event-map.js';
import { errorMessage, errorStack } from '../errors/error-message.js';

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
export class RedisLockEvents extends EventEmitter<RedisLockEventArgs> {
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
  emitIfWanted<K extends RedisLockEventName>(event: K, build: () => RedisLockEventMap[K]): void {
    if (this.wants(event)) this.emit(event, ...([build()] as RedisLockEventArgs[K]));
  }

  /**
   * Emits to the listeners, then publishes the same payload on the event's channel, without
   * letting a listener's exception escape into the caller (a metrics listener that throws must
   * not fail a lock release or a job acknowledgement) nor keep the event from the channel.
   */
  override emit<K extends RedisLockEventName>(event: K, ...args: RedisLockEventArgs[K]): boolean {
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
    `A ${who}${event ? ` of ${String(event)}` : ''} threw; the event's source carried on: ${errorStack(error) ?? errorMessage(error)}`,
  );
}
