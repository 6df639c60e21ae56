import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import { errorMessage } from '../core/errors/error-message.js';
import { ALL_DELAY_QUEUE_SCRIPTS } from './scripts/all-delay-queue-scripts.js';
import { JobWaiters } from './job-waiters.js';
import { JobWriter } from './writer/job-writer.js';
import { JobEnqueuer } from './job-enqueuer.js';
import { JobOutboxRelay } from './outbox-relay/job-outbox-relay.js';
import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { refuseUnknownKeys } from '../core/options/known-option-keys.js';
import { ON_DELAYED_REPEAT_KEYS, splitOnDelayedRepeat } from './repeat/repeat-option-keys.js';
import { ON_DELAYED_OPTION_KEYS, resolveConsumerOptions } from './consumer/resolve-consumer-options.js';
import { ConsumerRegistry } from './consumer-registry.js';
import { DelayedHandlerExplorer, type DiscoveredDelayedHandler } from './delayed-handler.explorer.js';
import { JobEventListeners } from './job-event-listeners.js';
import type { OnDelayedRepeat } from './interfaces/repeat-options.interface.js';
import type { RepeatDefinition } from './repeat/repeat-definition.js';
import { RepeatScheduler } from './repeat/repeat-scheduler.js';
import { settleWithin } from '../core/time/settle-within.js';
import { DelayQueueAlreadyStartedError } from '../core/errors/delay-queue-already-started.error.js';

/** Longest time bootstrap waits for the `repeat` schedules to be registered (Redis slow or down). */
const REPEAT_REGISTRATION_WAIT_MS = 5_000;

/**
 * Starts and stops the delay queue. Finds and checks the `@OnDelayed` handlers (and attaches the
 * `@OnJobEvent` listeners) in `onModuleInit` (so a mistake fails bootstrap before anything starts)
 * and starts one consumer per topic in `onApplicationBootstrap` through the `ConsumerRegistry`, beside
 * the outbox relay and the script preload; at shutdown drains the consumers, then flushes the jobs of
 * committed transactions.
 */
@Injectable()
export class DelayQueueOrchestrator implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('DelayQueue');
  private handlers: DiscoveredDelayedHandler[] = [];
  /** The `repeat` schedules of the handlers, checked in `onModuleInit`. */
  private schedules: Array<{ topic: string; definition: RepeatDefinition; source: string }> = [];
  /** Set by the first `onApplicationBootstrap`. */
  private started = false;

  constructor(
    private readonly explorer: DelayedHandlerExplorer,
    private readonly consumerRegistry: ConsumerRegistry,
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    private readonly connection: RedisConnection,
    private readonly repeats: RepeatScheduler,
    private readonly enqueuer: JobEnqueuer,
    @Inject(JobOutboxRelay) private readonly outbox: JobOutboxRelay | null,
    private readonly jobEventListeners: JobEventListeners,
    private readonly waiters: JobWaiters,
    private readonly writer: JobWriter,
  ) {}

  /**
   * Checks the handlers, then that the outbox's database answers: every `onModuleInit` hook of the
   * application ends before the first `onApplicationBootstrap` hook starts, so an outbox that is not
   * ready (`OutboxUnavailableError`) fails bootstrap before a leader election, a consumer or the
   * relay takes anything.
   */
  async onModuleInit(): Promise<void> {
    try {
      this.handlers = this.explorer.explore();
      this.jobEventListeners.attach();
      // Options are checked here too, so a bad `concurrency` fails bootstrap with the method named.
      for (const handler of this.handlers)
        resolveConsumerOptions(handler.options, this.config.delayQueue, handler.source, ON_DELAYED_OPTION_KEYS);
      this.schedules = this.handlers.flatMap((handler) => {
        const repeat = handler.options?.repeat;
        if (repeat === undefined) return [];
        return [{ topic: handler.topic, definition: this.prepareRepeat(handler, repeat), source: handler.source }];
      });
      await this.outbox?.prepare();
    } catch (error) {
      // Nest runs no shutdown hook after a failed init: close our connections ourselves, or they
      // would keep the process alive after the bootstrap error.
      await this.connection.onApplicationShutdown();
      throw error;
    }
  }

  /**
   * Starts the outbox relay, if any, and loads the delay-queue scripts into Redis's cache (an
   * optimisation only: it neither delays bootstrap nor fails it), beside the handlers' start.
   */
  async onApplicationBootstrap(): Promise<void> {
    void this.connection
      .loadScripts(ALL_DELAY_QUEUE_SCRIPTS)
      .catch((error: unknown) => this.logger.debug(`Script preload skipped: ${errorMessage(error)}`));
    await Promise.all([this.outbox?.start(), this.startHandlers()]);
  }

  /**
   * Drains every consumer, then flushes the writes of committed transactions still pending and
   * stops the outbox relay, before the module's connections close (in `onApplicationShutdown`).
   * Consumers drain first (the `@OnDelayed` ones, then those of `consume()`), so that jobs their
   * handlers schedule in transactions while they finish are flushed too. Beside the flush, the
   * outcomes of the jobs the drain finished reach their `waitFor()` calls in this process (their
   * notices may arrive after the acknowledgements' replies), within a bounded second.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.consumerRegistry.drain('on-delayed');
    await this.consumerRegistry.drain('all');
    await Promise.all([this.waiters.hearPublished(), this.flushWrites()]);
  }

  /**
   * After the drain: no consumer starts and no job is taken any more (`DelayQueueClosedError`), the
   * `waitFor()` calls still pending reject with it, and the `@OnJobEvent` listeners, which heard the
   * drain's outcomes, are detached.
   */
  onApplicationShutdown(): void {
    this.consumerRegistry.close();
    this.enqueuer.close();
    this.jobEventListeners.detach();
    this.waiters.close();
  }

  private async flushWrites(): Promise<void> {
    await this.enqueuer.flush();
    await this.outbox?.stop();
    // Last of the writes: the operation records they answered are deleted before the connections close.
    this.writer.sendAnsweredRecords();
  }

  /**
   * Registers the `repeat` schedules (upserts; a failure is logged and retried in the background, it
   * does not fail bootstrap, and bootstrap waits for them at most 5 s), then starts the consumers: an
   * instance restarting after downtime first replaces a stale queued tick by the catch-up rule's
   * one, before its consumer could claim it.
   */
  private async startHandlers(): Promise<void> {
    // A second run of the hooks (init() twice on one container) would start every consumer again;
    // with none to start it is harmless, as it was.
    if (this.started) {
      if (this.handlers.length === 0) return;
      throw new DelayQueueAlreadyStartedError(this.explorer.handledTopics());
    }
    this.started = true;
    const registering = Promise.all(
      this.schedules.map(({ topic, definition, source }) => this.repeats.register(topic, definition, source)),
    );
    await settleWithin(registering, REPEAT_REGISTRATION_WAIT_MS);
    for (const handler of this.handlers) {
      this.consumerRegistry.start(handler.topic, handler.invoke, handler.options, handler.source, 'on-delayed');
    }
  }

  private prepareRepeat(handler: DiscoveredDelayedHandler, repeat: OnDelayedRepeat): RepeatDefinition {
    const refuse = (option: string, problem: string): never => {
      throw new InvalidOptionsError(option, `${problem} (in ${handler.source})`);
    };
    refuseUnknownKeys(refuse, 'repeat', repeat, ON_DELAYED_REPEAT_KEYS);
    const { schedule, options } = splitOnDelayedRepeat(repeat);
    return this.repeats.prepare(handler.topic, schedule, options, handler.source);
  }
}
