import { Injectable, Logger } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { DuplicateDelayedHandlerError } from '../core/errors/duplicate-delayed-handler.error.js';
import type { ConsumerOptions } from './interfaces/consumer.interface.js';
import type { OnDelayedRepeat } from './interfaces/repeat-options.interface.js';
import { DelayedHandlerMetadataAccessor } from './delayed-handler-metadata.accessor.js';
import type { JobContext } from './interfaces/job-context.interface.js';
import { assertValidTopic } from '../core/keys/topic-name.js';
import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { describeValue } from '../core/options/option-validation.js';
import { JOB_EVENT_SOURCES, type JobEventMap } from '../core/events/job-event-map.js';

/** A decorated method found at bootstrap, bound to its provider instance. */
export interface DiscoveredDelayedHandler {
  readonly topic: string;
  readonly options?: ConsumerOptions & { readonly repeat?: OnDelayedRepeat };
  /** `ClassName.method`, for messages. */
  readonly source: string;
  readonly invoke: (payload: unknown, job: JobContext) => unknown;
}

/** A method marked `@OnJobEvent`, found at bootstrap, bound to its provider instance. */
export interface DiscoveredJobEventListener {
  readonly topic: string;
  readonly event: keyof JobEventMap;
  /** `@OnJobEvent on ClassName.method`, for messages. */
  readonly source: string;
  readonly invoke: (event: unknown) => unknown;
}

/**
 * Finds `@OnDelayed` (and `@OnJobEvent`) methods on every provider and controller and checks them as
 * a whole: a bad topic or two handlers for one topic stop the application at bootstrap; a handler on
 * a request-scoped provider is reported and skipped.
 */
@Injectable()
export class DelayedHandlerExplorer {
  private readonly logger = new Logger('DelayQueue');
  /** What the last `explore()` found (none before it ran). */
  private found: readonly DiscoveredDelayedHandler[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: DelayedHandlerMetadataAccessor,
  ) {}

  /** Finds and checks the handlers, and remembers them for `handledTopics()`. */
  explore(): DiscoveredDelayedHandler[] {
    const found: DiscoveredDelayedHandler[] = [];
    this.walk(
      '@OnDelayed',
      (method) => this.accessor.getDelayedHandlers(method),
      (entries, instance, method, source) => {
        for (const { topic, options } of entries) {
          assertValidTopic(topic, source);
          found.push({ topic, options, source, invoke: (payload, job) => method.call(instance, payload, job) });
        }
      },
    );
    this.assertOneHandlerPerTopic(found);
    this.found = found;
    return found;
  }

  /**
   * Finds and checks the `@OnJobEvent` listeners: a bad topic or event name stops the application at
   * bootstrap; a listener on a request-scoped provider is reported and skipped.
   */
  exploreJobEventListeners(): DiscoveredJobEventListener[] {
    const found: DiscoveredJobEventListener[] = [];
    this.walk(
      '@OnJobEvent',
      (method) => this.accessor.getJobEventListeners(method),
      (entries, instance, method, source) => {
        for (const { topic, event } of entries) {
          assertValidTopic(topic, source);
          if (!Object.hasOwn(JOB_EVENT_SOURCES, event)) {
            throw new InvalidOptionsError(
              source,
              `the event ${describeValue(event)} is not one of ${Object.keys(JOB_EVENT_SOURCES).join(', ')}`,
            );
          }
          found.push({ topic, event, source, invoke: (payload) => method.call(instance, payload) });
        }
      },
    );
    return found;
  }

  /**
   * Calls `visit` with the entries `read` finds on each method of every provider and controller
   * (DiscoveryService + MetadataScanner, as nestjs/schedule does), skipping request-scoped ones with
   * a warning: there is no instance of them outside a request.
   */
  private walk<E>(
    decorator: string,
    read: (method: unknown) => readonly E[],
    visit: (entries: readonly E[], instance: object, method: (...args: unknown[]) => unknown, source: string) => void,
  ): void {
    const wrappers: InstanceWrapper[] = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    for (const wrapper of wrappers) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!instance || typeof instance !== 'object') continue;
      const prototype = Object.getPrototypeOf(instance) as object | null;
      if (!prototype) continue;
      for (const methodName of this.scanner.getAllMethodNames(prototype)) {
        const entries = read(instance[methodName]);
        if (entries.length === 0) continue;
        const className = (instance.constructor as { name?: string } | undefined)?.name ?? String(wrapper.name);
        const source = `${decorator} on ${className}.${methodName}`;
        if (!wrapper.isDependencyTreeStatic()) {
          this.logger.warn(
            `${source} will NOT run: ${className} is request-scoped (or depends on a request-scoped provider), so there ` +
              'is no instance outside a request. Move the handler to a singleton provider (it can resolve request-scoped ' +
              'services with ModuleRef.resolve()).',
          );
          continue;
        }
        visit(entries, instance, instance[methodName] as (...args: unknown[]) => unknown, source);
      }
    }
  }

  /** Topics consumed by an `@OnDelayed` handler of this application (found at `onModuleInit`). */
  handledTopics(): readonly string[] {
    return [...new Set(this.found.map((handler) => handler.topic))];
  }

  private assertOneHandlerPerTopic(found: DiscoveredDelayedHandler[]): void {
    const byTopic = new Map<string, string[]>();
    for (const handler of found) byTopic.set(handler.topic, [...(byTopic.get(handler.topic) ?? []), handler.source]);
    for (const [topic, sources] of byTopic) {
      if (sources.length > 1) throw new DuplicateDelayedHandlerError(topic, sources);
    }
  }
}
