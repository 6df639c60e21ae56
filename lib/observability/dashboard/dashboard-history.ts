import { Inject, Injectable, Logger, Optional, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { DelayQueueService } from '../../delay-queue/delay-queue.service.js';
import { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import type { RedisLockEventMap } from '../../core/events/redis-lock-event-map.js';
import type { DashboardHistory as DashboardHistoryReply, DashboardSample } from './dashboard-api.interface.js';
import { DashboardTopicRegistry } from './dashboard-topics.js';
import { MAX_SAMPLED_TOPICS, REDIS_LOCK_DASHBOARD_OPTIONS } from './redis-lock-dashboard.constants.js';
import type { ResolvedDashboardOptions } from './resolve-dashboard-options.js';
import { errorMessage } from '../../core/errors/error-message.js';
import { requireRedisLockModule } from '../../core/errors/redis-lock-module-not-visible.error.js';

/** Lateness values kept per interval for the percentiles; beyond it, a uniform reservoir sample. */
const LATENESS_RESERVOIR = 1_000;

/**
 * The numbers behind the dashboard's plots, kept in memory: every `sampleMs` the queue depths of
 * the known topics (one `stats` call each) and, from this process's job events, how late handlers
 * started and how many jobs finished. A ring of `windowMs / sampleMs` samples; nothing is stored in
 * Redis, so the plots start empty after a restart and show this instance's handlers only.
 */
@Injectable()
export class DashboardHistory implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('RedisLockDashboard');
  private readonly samples: DashboardSample[] = [];
  private readonly capacity: number;
  private timer?: NodeJS.Timeout;
  private sampling = false;
  private warned = false;
  private lateness: number[] = [];
  private started = 0;
  private succeeded = 0;
  private failed = 0;
  private readonly onStarted = ({ latenessMs }: RedisLockEventMap['job.started']) => {
    this.started++;
    if (this.lateness.length < LATENESS_RESERVOIR) this.lateness.push(latenessMs);
    else {
      const slot = Math.floor(Math.random() * this.started);
      if (slot < LATENESS_RESERVOIR) this.lateness[slot] = latenessMs;
    }
  };
  private readonly onSucceeded = (_: RedisLockEventMap['job.succeeded']) => void this.succeeded++;
  private readonly onFailed = (_: RedisLockEventMap['job.failed']) => void this.failed++;

  constructor(
    @Inject(REDIS_LOCK_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    // Optional only so that a RedisLockModule the dashboard cannot see is reported by name (below).
    @Optional() private readonly events: RedisLockEvents,
    @Optional() private readonly queue: DelayQueueService,
    private readonly topics: DashboardTopicRegistry,
  ) {
    requireRedisLockModule('RedisLockDashboardModule', { RedisLockEvents: events, DelayQueueService: queue });
    this.capacity = options.sampleMs > 0 ? Math.ceil(options.windowMs / options.sampleMs) : 0;
  }

  onApplicationBootstrap(): void {
    if (this.capacity === 0) return;
    this.events.on('job.started', this.onStarted);
    this.events.on('job.succeeded', this.onSucceeded);
    this.events.on('job.failed', this.onFailed);
    this.timer = setInterval(() => void this.sample(), this.options.sampleMs);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.events.off('job.started', this.onStarted);
    this.events.off('job.succeeded', this.onSucceeded);
    this.events.off('job.failed', this.onFailed);
  }

  history(): DashboardHistoryReply {
    return { sampleMs: this.options.sampleMs, windowMs: this.options.windowMs, samples: [...this.samples] };
  }

  /** Takes one sample now (the timer calls it; exposed for tests). A sample still being read is not overlapped. */
  async sample(): Promise<void> {
    if (this.sampling) return;
    this.sampling = true;
    try {
      const lateness = this.lateness.sort((a, b) => a - b);
      const counters = { started: this.started, succeeded: this.succeeded, failed: this.failed };
      this.lateness = [];
      this.started = this.succeeded = this.failed = 0;

      const topics = (await this.topics.list().catch(() => this.topics.known())).slice(0, MAX_SAMPLED_TOPICS);
      const results = await Promise.allSettled(topics.map((topic) => this.queue.stats(topic)));
      const due: Record<string, number> = {};
      let scheduled = 0;
      let active = 0;
      let dead = 0;
      results.forEach((result, i) => {
        if (result.status !== 'fulfilled') return;
        due[topics[i]] = result.value.due;
        scheduled += result.value.scheduled;
        active += result.value.active;
        dead += result.value.dead;
      });
      const failures = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
      if (failures.length > 0 && !this.warned) {
        this.warned = true;
        this.logger.warn(`Queue depths for the dashboard plots could not be read: ${errorMessage(failures[0].reason)}`);
      }
      this.samples.push({
        t: Date.now(),
        due,
        scheduled,
        active,
        dead,
        ...counters,
        latenessP50: percentile(lateness, 0.5),
        latenessP95: percentile(lateness, 0.95),
        latenessMax: lateness.length > 0 ? lateness[lateness.length - 1] : null,
      });
      if (this.samples.length > this.capacity) this.samples.splice(0, this.samples.length - this.capacity);
    } finally {
      this.sampling = false;
    }
  }
}

function percentile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}
