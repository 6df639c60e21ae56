import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { ResolvedConsumerOptions } from './resolve-consumer-options.js';
import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import { DelayQueueConsumer, type ConsumerContext } from './delay-queue.consumer.js';
import type { Consumer } from '../interfaces/consumer.interface.js';
import type { DelayedJobHandler } from '../interfaces/job-context.interface.js';

/**
 * The consumer of a sharded topic (`delayQueue.topics[topic].shards > 1`): one claim loop per shard,
 * presented as one `Consumer`.
 *
 * Why a loop per shard rather than one loop visiting the shards in turn: each shard lives in its own
 * slot, so on a Redis Cluster the loops claim from several masters at once (the point of sharding a
 * hot topic), and on any Redis no shard can starve: every shard always has its own loop and its own
 * share of the handler slots, so a backlog in one shard never delays due jobs of another by more
 * than its share. `concurrency` is divided evenly over the shards (the first `concurrency % shards`
 * get one more); a shard always gets at least one handler slot, so a topic with more shards than
 * `concurrency` runs up to one handler per shard.
 */
export class ShardedConsumer<T = unknown> implements Consumer {
  private readonly parts: DelayQueueConsumer<T>[];
  private readonly onClosed: ConsumerContext['onClosed'];
  private closing?: Promise<void>;

  constructor(
    readonly topic: string,
    handler: DelayedJobHandler<T>,
    options: ResolvedConsumerOptions,
    shards: readonly TopicKeys[],
    context: Omit<ConsumerContext, 'keys'>,
  ) {
    const base = Math.floor(options.concurrency / shards.length);
    const extra = options.concurrency % shards.length;
    const rate = options.rateLimit;
    if (rate && rate.max < shards.length) {
      throw new InvalidOptionsError(
        'rateLimit.max',
        `got ${rate.max}; topic ${JSON.stringify(topic)} has ${shards.length} shards, which share the limit ` +
          `evenly, so use at least ${shards.length}`,
      );
    }
    const rateShare = (i: number) =>
      rate && { ...rate, max: Math.floor(rate.max / shards.length) + (i < rate.max % shards.length ? 1 : 0) };
    this.parts = shards.map(
      (keys, i) =>
        new DelayQueueConsumer<T>(
          topic,
          handler,
          { ...options, concurrency: Math.max(1, base + (i < extra ? 1 : 0)), rateLimit: rateShare(i) },
          // The parts report to this consumer; the service hears once, when every part has closed.
          { ...context, keys, otherShards: shards.filter((other) => other !== keys), onClosed: () => undefined },
        ),
    );
    this.onClosed = context.onClosed;
  }

  get running(): boolean {
    return this.parts.some((part) => part.running);
  }

  get activeCount(): number {
    return this.parts.reduce((sum, part) => sum + part.activeCount, 0);
  }

  /** Blocking connections opened so far over all shards. For diagnostics. */
  get blockingConnectionsOpened(): number {
    return this.parts.reduce((sum, part) => sum + part.blockingConnectionsOpened, 0);
  }

  close(options?: { timeout?: number }): Promise<void> {
    return (this.closing ??= Promise.all(this.parts.map((part) => part.close(options))).then(() => this.onClosed(this)));
  }
}
