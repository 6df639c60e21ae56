import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { DelayedHandlerMetadataAccessor } from '../../delay-queue/delayed-handler-metadata.accessor.js';
import { RedisKeySpace } from '../../keys/redis-key-space.js';
import { RedisLockEvents } from '../../lock/lock-events.js';
import { RedisConnection } from '../../redis/redis-connection.js';
import type { TopicShards } from '../../delay-queue/topic-shards.js';
import { DASHBOARD_KEY_SPACE, DASHBOARD_TOPIC_SHARDS, REDIS_LOCK_DASHBOARD_OPTIONS } from './redis-lock-dashboard.constants.js';
import type { ResolvedDashboardOptions } from './resolve-dashboard-options.js';
import { escapeGlob, hashTagOf, scanKeys } from './scan-keys.js';

const TOPIC = /^[A-Za-z0-9_.:\/#-]{1,128}$/;
/** Most topics remembered from SCAN. */
const MAX_DISCOVERED_TOPICS = 1_000;

/**
 * Which topics the dashboard shows: the configured ones, or else every topic it can learn of:
 * `@OnDelayed` handlers of the application, topics this process scheduled or ran (job events), and
 * topics found in Redis by SCAN (remembered for `discoveryIntervalMs`, so the page's refreshes do
 * not walk the keyspace each time).
 */
@Injectable()
export class DashboardTopicRegistry implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('RedisLockDashboard');
  private readonly handled = new Set<string>();
  private readonly seen = new Set<string>();
  private scanned: string[] = [];
  private scannedAt = -Infinity;
  private scanning?: Promise<void>;
  private readonly onEvent = ({ topic }: { topic: string }) => {
    if (this.seen.size < MAX_DISCOVERED_TOPICS) this.seen.add(topic);
  };

  constructor(
    @Inject(REDIS_LOCK_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    @Inject(DASHBOARD_KEY_SPACE) private readonly keySpace: RedisKeySpace,
    @Inject(DASHBOARD_TOPIC_SHARDS) private readonly shards: TopicShards,
    private readonly connection: RedisConnection,
    private readonly events: RedisLockEvents,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onApplicationBootstrap(): void {
    const accessor = new DelayedHandlerMetadataAccessor(new Reflector());
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      const prototype = instance && typeof instance === 'object' ? (Object.getPrototypeOf(instance) as object | null) : null;
      if (!prototype) continue;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        for (const { topic } of accessor.getDelayedHandlers(instance![method])) this.handled.add(topic);
      }
    }
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
    return this.handled.has(topic);
  }

  /** The topics known now, sorted; scans Redis first when the last scan is older than `discoveryIntervalMs`. */
  async list(): Promise<string[]> {
    if (this.options.topics) return [...this.options.topics];
    if (performance.now() - this.scannedAt >= this.options.discoveryIntervalMs) await this.rescan();
    return [...new Set([...this.handled, ...this.seen, ...this.scanned])].sort();
  }

  /** The topics known without touching Redis (for the background sampler). */
  known(): string[] {
    if (this.options.topics) return [...this.options.topics];
    return [...new Set([...this.handled, ...this.seen, ...this.scanned])].sort();
  }

  /** `hot#2` is shard 2 of `hot` when `hot` is configured with shards: shown as `hot`. */
  private logicalTopic(found: string): string {
    const shard = /^(.*)#\d+$/.exec(found);
    return shard && this.shards.count(shard[1]) > 1 ? shard[1] : found;
  }

  private rescan(): Promise<void> {
    // Concurrent refreshes share one scan.
    this.scanning ??= this.scan().finally(() => (this.scanning = undefined));
    return this.scanning;
  }

  private async scan(): Promise<void> {
    const base = `${this.keySpace.prefix}:dq:`;
    try {
      // A topic (shard) that has a job, in any state, has its jobs hash; its other keys (marker,
      // short-lived operation records, of which a busy topic has many) would only crowd the scan.
      const { keys, truncated } = await scanKeys(this.connection.client, `${escapeGlob(base)}{*}:jobs`, MAX_DISCOVERED_TOPICS * 5);
      const topics = new Set<string>();
      for (const key of keys) {
        const topic = hashTagOf(key, base);
        if (topic !== undefined && key === `${base}{${topic}}:jobs` && TOPIC.test(topic)) topics.add(this.logicalTopic(topic));
      }
      this.scanned = [...topics];
      if (truncated) this.logger.warn(`Topic discovery stopped early; pass RedisLockDashboardModule.forRoot({ topics }) to list them explicitly.`);
    } finally {
      this.scannedAt = performance.now();
    }
  }
}
