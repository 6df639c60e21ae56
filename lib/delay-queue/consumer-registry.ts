import { Inject, Injectable, Logger } from '@nestjs/common';
import { DelayQueueClosedError } from '../core/errors/delay-queue-closed.error.js';
import { DuplicateDelayedHandlerError } from '../core/errors/duplicate-delayed-handler.error.js';
import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { RedisLockEvents } from '../core/events/redis-lock-events.js';
import { assertValidTopic } from '../core/keys/topic-name.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../core/options/redis-lock-config.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import { REDIS_LOCK_TRACING, type RedisLockTracing } from '../core/tracing/redis-lock-tracing.js';
import { CancelListener } from './consumer/cancel-listener.js';
import { DelayQueueConsumer } from './consumer/delay-queue.consumer.js';
import { CONSUMER_OPTION_KEYS, ON_DELAYED_OPTION_KEYS, resolveConsumerOptions } from './consumer/resolve-consumer-options.js';
import { ShardedConsumer } from './consumer/sharded-consumer.js';
import type { Consumer, ConsumerOptions } from './interfaces/consumer.interface.js';
import type { DelayedJobHandler } from './interfaces/job-context.interface.js';
import { TopicShards } from './jobs/topic-shards.js';
import { RepeatScheduler } from './repeat/repeat-scheduler.js';

type Closable = { close(options?: { timeout?: number }): Promise<void> };

/** Who started a consumer: `consume()`, or the orchestrator for an `@OnDelayed` method. */
type ConsumerOrigin = 'consume' | 'on-delayed';

/**
 * Builds this application's consumers, for `DelayQueueService.consume()` and for the `@OnDelayed`
 * orchestrator alike, and drains them when the orchestrator shuts the delay queue down. Invariants: at most one
 * consumer per topic at a time (a closed consumer frees its topic), and none starts once the
 * draining of all consumers has begun.
 */
@Injectable()
export class ConsumerRegistry {
  /** The delay queue's logger context: consumers log as the service does. */
  private readonly logger = new Logger('DelayQueue');
  private readonly consumers = new Map<string, { consumer: Consumer & Closable; source: string; origin: ConsumerOrigin }>();
  /** Set once every consumer is being drained: no new one may start. */
  private draining = false;
  private closed = false;

  constructor(
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    private readonly connection: RedisConnection,
    private readonly events: RedisLockEvents,
    private readonly shards: TopicShards,
    @Inject(REDIS_LOCK_TRACING) private readonly tracing: RedisLockTracing,
    private readonly repeats: RepeatScheduler,
    private readonly cancels: CancelListener,
  ) {}

  /**
   * Starts a consumer of `topic`; `source` names it in errors (`consume("t")`, or the decorated method).
   *
   * @throws InvalidTopicError, DelayQueueClosedError, InvalidOptionsError, DuplicateDelayedHandlerError
   */
  start<T>(
    topic: string,
    handler: DelayedJobHandler<T>,
    options: ConsumerOptions | undefined,
    source: string,
    origin: ConsumerOrigin,
  ): Consumer {
    assertValidTopic(topic, source);
    if (this.draining || this.closed) throw new DelayQueueClosedError('start a consumer');
    if (typeof handler !== 'function') {
      throw new InvalidOptionsError(source, 'the handler must be a function (payload, job) => Promise<void> | void');
    }
    const existing = this.consumers.get(topic);
    if (existing) throw new DuplicateDelayedHandlerError(topic, [existing.source, source]);
    const resolved = resolveConsumerOptions(
      options,
      this.config.delayQueue,
      source,
      origin === 'on-delayed' ? ON_DELAYED_OPTION_KEYS : CONSUMER_OPTION_KEYS,
    );
    const shardKeys = this.shards.all(topic);
    const shared = {
      connection: this.connection,
      retention: this.config.delayQueue.retention,
      logger: this.logger,
      events: this.events,
      tracing: this.tracing,
      onClosed: (closed: Consumer) => {
        if (this.consumers.get(topic)?.consumer === closed) this.consumers.delete(topic);
      },
      // A claimed repeat tick enqueues the next one before its handler runs.
      beforeRun: (jobId: string) => this.repeats.afterClaim(topic, jobId),
      cancels: this.cancels,
    };
    // A sharded topic gets one claim loop per shard (see ShardedConsumer), under one Consumer.
    const consumer =
      shardKeys.length === 1
        ? new DelayQueueConsumer<T>(topic, handler, resolved, { ...shared, keys: shardKeys[0] })
        : new ShardedConsumer<T>(topic, handler, resolved, shardKeys, shared);
    this.consumers.set(topic, { consumer, source, origin });
    return consumer;
  }

  /**
   * Closes the consumers started by `origin`, or all of them (and then no new one may start);
   * settles once they have drained.
   */
  async drain(origin: ConsumerOrigin | 'all'): Promise<void> {
    if (origin === 'all') this.draining = true;
    const draining = [...this.consumers.values()].filter((entry) => origin === 'all' || entry.origin === origin);
    await Promise.all(draining.map(({ consumer }) => consumer.close()));
  }

  /** No consumer may start any more (the module's connections are closing). */
  close(): void {
    this.closed = true;
    this.cancels.close();
  }
}
