import { Inject, Injectable, Logger, Optional, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { REDIS_LOCK_INTERNALS } from '../../core/redis-lock-internals.token.js';
import type { RedisLockInternals } from '../../redis-lock.module-internals.js';
import { TopicDirectory } from '../../delay-queue/topic-directory.js';
import { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import { REDIS_LOCK_DASHBOARD_OPTIONS } from './redis-lock-dashboard.constants.js';
import type { ResolvedDashboardOptions } from './resolve-dashboard-options.js';
import { requireRedisLockModule } from '../../core/errors/redis-lock-module-not-visible.error.js';

/** Most topics remembered from job events, and from one SCAN. */
const MAX_DISCOVERED_TOPICS = 1_000;

/**
 * Which topics the dashboard shows: the configured ones, or else every topic it can learn of:
 * `@OnDelayed` handlers of the application, topics this process scheduled or ran (job events), and
 * topics found in Redis (remembered for `discoveryIntervalMs`, so the page's refreshes do not walk
 * the keyspace each time).
 */
@Injectable()
export class DashboardTopicRegistry implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('RedisLockDashboard');
  private readonly seen = new Set<string>();
  private scanned: string[] = [];
  private scannedAt = -Infinity;
  private scanning?: Promise<void>;
  private readonly onEvent = ({ topic }: { topic: string }) => {
    if (this.seen.size < MAX_DISCOVERED_TOPICS) this.seen.add(topic);
  };

  constructor(
    @Inject(REDIS_LOCK_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    // Optional only so that a RedisLockModule the dashboard cannot see is reported by name (below).
    @Optional() @Inject(REDIS_LOCK_INTERNALS) internals: RedisLockInternals | undefined,
    @Optional() private readonly events: RedisLockEvents,
  ) {
    requireRedisLockModule('RedisLockDashboardModule', { TopicDirectory: internals?.topicDirectory, RedisLockEvents: events });
    this.directory = internals!.topicDirectory;
  }

  private readonly directory: TopicDirectory;

  onApplicationBootstrap(): void {
    if (!this.options.topics) {
      this.events.on('job.scheduled', this.onEvent);
      this.events.on('job.started', this.onEvent);
    }
  }

  onModuleDestroy(): void {
    this.events.off('job.scheduled', this.onEvent);
    this.events.off('job.started', this.onEvent);
  }

  /** True when an `@OnDelayed` handler of this application consumes `topic`. */
  isHandled(topic: string): boolean {
    return this.directory.handledTopics().includes(topic);
  }

  /** The topics known now, sorted; scans Redis first when the last scan is older than `discoveryIntervalMs`. */
  async list(): Promise<string[]> {
    if (this.options.topics) return [...this.options.topics];
    if (performance.now() - this.scannedAt >= this.options.discoveryIntervalMs) await this.rescan();
    return this.known();
  }

  /** The topics known without touching Redis (for the background sampler). */
  known(): string[] {
    if (this.options.topics) return [...this.options.topics];
    return [...new Set([...this.directory.handledTopics(), ...this.seen, ...this.scanned])].sort();
  }

  private rescan(): Promise<void> {
    // Concurrent refreshes share one scan.
    this.scanning ??= this.scan().finally(() => (this.scanning = undefined));
    return this.scanning;
  }

  private async scan(): Promise<void> {
    try {
      // One jobs hash per topic, or per shard of a sharded topic: room for shards beyond the topics kept.
      const { topics, truncated } = await this.directory.topicsInRedis(MAX_DISCOVERED_TOPICS * 5);
      this.scanned = topics;
      if (truncated)
        this.logger.warn(`Topic discovery stopped early; pass RedisLockDashboardModule.forRoot({ topics }) to list them explicitly.`);
    } finally {
      this.scannedAt = performance.now();
    }
  }
}
