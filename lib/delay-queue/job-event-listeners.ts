import { Injectable, Logger } from '@nestjs/common';
import { JOB_EVENT_SOURCES } from '../core/events/job-event-map.js';
import { RedisLockEvents } from '../core/events/redis-lock-events.js';
import type { RedisLockEventName } from '../core/events/redis-lock-event-map.js';
import { DelayedHandlerExplorer, type DiscoveredJobEventListener } from './delayed-handler.explorer.js';
import { errorMessage, errorStack } from '../core/errors/error-message.js';

/** What every job event carries, whatever its name. */
interface JobEventBase {
  readonly topic: string;
  readonly id: string;
}

/**
 * Runs the `@OnJobEvent` methods: found, checked and attached by the orchestrator's `onModuleInit` (a
 * mistake fails bootstrap before a consumer starts, so no outcome is missed), called from
 * `RedisLockEvents` listeners (one per event name in use, dispatching by topic), detached in its
 * `onApplicationShutdown`, after the consumers have drained, so the outcomes of the drain are reported too.
 *
 * Invariant: a listener's exception, thrown or rejected, is logged once here and never reaches the
 * emitter, the job or the other listeners.
 */
@Injectable()
export class JobEventListeners {
  private readonly logger = new Logger('DelayQueue');
  /** The emitter listeners added, to remove at shutdown. */
  private readonly attached: Array<{ name: RedisLockEventName; listener: (event: JobEventBase) => void }> = [];

  constructor(
    private readonly explorer: DelayedHandlerExplorer,
    private readonly events: RedisLockEvents,
  ) {}

  /** Finds the listeners and attaches them (once: a second call finds them attached). */
  attach(): void {
    if (this.attached.length > 0) return;
    const byName = new Map<RedisLockEventName, Map<string, DiscoveredJobEventListener[]>>();
    for (const found of this.explorer.exploreJobEventListeners()) {
      const name = JOB_EVENT_SOURCES[found.event];
      const byTopic = byName.get(name) ?? new Map<string, DiscoveredJobEventListener[]>();
      byTopic.set(found.topic, [...(byTopic.get(found.topic) ?? []), found]);
      byName.set(name, byTopic);
    }
    for (const [name, byTopic] of byName) {
      const listener = (event: JobEventBase) => {
        for (const found of byTopic.get(event.topic) ?? []) this.call(found, event);
      };
      this.events.on(name, listener as never);
      this.attached.push({ name, listener });
    }
  }

  detach(): void {
    for (const { name, listener } of this.attached.splice(0)) this.events.off(name, listener as never);
  }

  private call(found: DiscoveredJobEventListener, event: JobEventBase): void {
    try {
      const returned = found.invoke(event);
      if (typeof (returned as PromiseLike<unknown> | undefined)?.then === 'function') {
        Promise.resolve(returned).catch((error: unknown) => this.report(found, event, error));
      }
    } catch (error) {
      this.report(found, event, error);
    }
  }

  private report(found: DiscoveredJobEventListener, event: JobEventBase, error: unknown): void {
    this.logger.error(
      `${found.source} threw on the ${JSON.stringify(found.event)} event of job ${JSON.stringify(event.id)} of topic ` +
        `${JSON.stringify(event.topic)}; the job is not affected: ${errorMessage(error)}`,
      errorStack(error),
    );
  }
}
