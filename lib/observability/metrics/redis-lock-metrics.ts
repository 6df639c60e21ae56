import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { Counter, Gauge, Histogram, register as defaultRegistry, type Registry } from 'prom-client';
import { DelayQueueService } from '../../delay-queue/delay-queue.service.js';
import type { DelayQueueStats } from '../../delay-queue/interfaces/delayed-job.interface.js';
import { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import type { RedisLockEventMap, RedisLockEventName } from '../../core/events/redis-lock-event-map.js';
import { defaultLockKeyPattern, type LockKeyClassifier } from './key-pattern.js';
import { DEFAULT_DURATION_BUCKETS, DEFAULT_MAX_TOPICS, REDIS_LOCK_METRICS_OPTIONS } from './redis-lock-metrics.constants.js';
import type { RedisLockMetricsOptions } from './redis-lock-metrics-options.interface.js';
import { errorMessage } from '../../core/errors/error-message.js';
import { REDIS_LOCK_INTERNALS } from '../../core/redis-lock-internals.token.js';
import type { RedisLockInternals } from '../../redis-lock.module-internals.js';
import { requireRedisLockModule } from '../../core/errors/redis-lock-module-not-visible.error.js';

const QUEUE_STATES = ['due', 'scheduled', 'active', 'dead', 'grouped', 'completed'] as const;
const OTHER_PATTERN = 'other';
/**
 * The `topic` label of every topic past `maxTopics`: `<` and `>` are not allowed in topic names
 * (topic-name.ts), so no topic, not even one named `other`, can pass for the overflow.
 */
const OTHER_TOPIC = '<other>';

type Listener<K extends RedisLockEventName> = (event: RedisLockEventMap[K]) => void;

/**
 * Prometheus metrics fed by `RedisLockEvents`, plus queue depths read from Redis on each scrape.
 * Created by `RedisLockMetricsModule`; registered on module init, unregistered on destroy (so a
 * second application in the same process, e.g. in tests, can register them again).
 */
@Injectable()
export class RedisLockMetrics implements OnModuleInit, OnModuleDestroy {
  /** The registry the metrics live in (serve `await registry.metrics()` on `/metrics`). */
  readonly registry: Registry;
  private readonly logger = new Logger('RedisLockMetrics');
  private readonly classify: LockKeyClassifier;
  private readonly patterns = new Map<string, string>();
  private readonly maxPatterns: number;
  /** The topics that keep their own label and whose depths are read on a scrape: at most `maxTopics`. */
  private readonly topics: Set<string>;
  private readonly maxTopics: number;
  private warnedTopicOverflow = false;
  private readonly listeners: Array<[RedisLockEventName, Listener<never>]> = [];
  private readonly names: string[] = [];
  /** The queue stats read for the scrape in progress, shared by its gauges. */
  private statsRead?: Promise<Map<string, DelayQueueStats>>;
  private warnedOverflow = false;

  /** @internal Nest builds it: import RedisLockMetricsModule instead. */
  constructor(
    @Inject(REDIS_LOCK_METRICS_OPTIONS) private readonly options: RedisLockMetricsOptions,
    // Optional only so that a RedisLockModule this module cannot see is reported by name (below).
    @Optional() private readonly events: RedisLockEvents,
    @Optional() private readonly queue: DelayQueueService,
    @Optional() @Inject(REDIS_LOCK_INTERNALS) private readonly internals?: RedisLockInternals,
  ) {
    requireRedisLockModule('RedisLockMetricsModule', { RedisLockEvents: events, DelayQueueService: queue });
    this.registry = options.registry ?? defaultRegistry;
    this.classify = options.keyPattern ?? defaultLockKeyPattern;
    this.maxPatterns = options.maxKeyPatterns ?? 100;
    this.maxTopics = options.maxTopics ?? DEFAULT_MAX_TOPICS;
    this.topics = new Set(options.topics ?? []);
  }

  /** Nest lifecycle hook: registers the metrics in the registry and starts listening to the module's events. */
  onModuleInit(): void {
    // The application's own topics are kept before any event can bring a tenant's: the global
    // RedisLockModule, initialised before this module, has found its @OnDelayed handlers by now.
    for (const topic of this.internals?.topicDirectory.applicationTopics() ?? []) this.topicOf(topic);
    const prefix = this.options.prefix ?? 'redis_lock_';
    const buckets = this.options.buckets ?? DEFAULT_DURATION_BUCKETS;
    const registers = [this.registry];
    const named = (name: string) => {
      this.names.push(prefix + name);
      return prefix + name;
    };
    const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
      new Counter<L>({ name: named(name), help, labelNames, registers });
    const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
      new Histogram<L>({ name: named(name), help, labelNames, buckets, registers });
    const lockLabels = ['key_pattern'] as const;

    const wait = histogram('lock_wait_seconds', 'Time from an acquire call to the lock being held.', lockLabels);
    const hold = histogram('lock_hold_seconds', 'Time a lock was held, until released or lost.', lockLabels);
    const acquisitions = counter('lock_acquisitions_total', 'Locks taken.', lockLabels);
    const timeouts = counter(
      'lock_timeouts_total',
      'Acquires that gave up because the lock was not free in time (tryAcquire returning null included).',
      lockLabels,
    );
    const losses = counter('lock_losses_total', 'Held locks whose lease was lost before release.', lockLabels);
    const lateness = histogram('job_lateness_seconds', 'Time from a job being due to its handler starting.', ['topic']);
    const runTime = histogram('job_run_seconds', 'Handler run time, by outcome (succeeded or failed).', ['topic', 'outcome']);
    const outcomes = counter(
      'jobs_total',
      'Job outcomes: scheduled (a job created), duplicate (scheduled with the id of an existing job, which ' +
        'was kept), replaced, succeeded, failed, retried, dead, rate_limited (sent back by JobRateLimitedError), ' +
        'recovered (taken back from a consumer that went silent).',
      ['topic', 'outcome'],
    );
    const afterCommitRetries = counter(
      'after_commit_write_retries_total',
      'Failed writes of jobs scheduled in a committed transaction (each is retried until it lands); per batch attempt.',
      ['topic'],
    );
    const afterCommitLost = counter(
      'after_commit_writes_lost_total',
      'Jobs scheduled in a committed transaction that were never written to Redis (unreachable until the shutdown deadline).',
      ['topic'],
    );
    const leadershipChanges = counter(
      'leadership_changes_total',
      'Leadership terms of @LeaderElection keys begun (acquired) and ended (stepped-down, lease-lost) on this instance.',
      ['key', 'change'],
    );
    const leader = new Gauge({
      name: named('leader'),
      help: '1 while this instance is the leader of the @LeaderElection key, 0 after its term ended.',
      labelNames: ['key'],
      registers,
    });
    const oneInstanceChanges = counter(
      'one_instance_lease_changes_total',
      '@OnOneInstance leases taken (acquired) and given up (handed-back, lease-lost) by this instance.',
      ['key', 'change'],
    );
    const oneInstanceSkipped = counter(
      'one_instance_skipped_total',
      '@OnOneInstance calls skipped on this instance: another instance holds the lease (not-owner), or ' +
        'a run is still going (still-running).',
      ['key', 'reason'],
    );
    const logLinesDropped = counter(
      'job_log_lines_dropped_total',
      'Lines handlers logged with JobContext.log() whose write Redis did not confirm (unreachable or no answer in time).',
      ['topic'],
    );
    // prom-client calls collect() with the gauge as `this`.
    const queue = this.queue;
    const readQueueStats = () => this.readQueueStats();
    new Gauge({
      name: named('after_commit_writes_pending'),
      help: 'Jobs scheduled in a committed transaction not yet written to Redis (being retried).',
      registers,
      collect() {
        this.set(queue.pendingScheduleWrites);
      },
    });
    new Gauge({
      name: named('queue_jobs'),
      help:
        "Jobs per topic and state (due, scheduled, active, dead, grouped: waiting for their group's turn, " +
        'completed: kept by keepCompleted), read from Redis on each scrape.',
      labelNames: ['topic', 'state'],
      registers,
      async collect() {
        const stats = await readQueueStats();
        this.reset();
        for (const [topic, counts] of stats) for (const state of QUEUE_STATES) this.set({ topic, state }, counts[state] ?? 0);
      },
    });
    new Gauge({
      name: named('queue_schedules'),
      help: 'Repeatable schedules per topic (repeat(), @OnDelayed({ repeat })), read from Redis on each scrape with queue_jobs.',
      labelNames: ['topic'],
      registers,
      async collect() {
        const stats = await readQueueStats();
        this.reset();
        for (const [topic, counts] of stats) this.set({ topic }, counts.schedules);
      },
    });
    new Gauge({
      name: named('queue_paused'),
      help: '1 while the topic is paused (DelayQueueService.pause), else 0; read with queue_jobs.',
      labelNames: ['topic'],
      registers,
      async collect() {
        const stats = await readQueueStats();
        this.reset();
        for (const [topic, counts] of stats) this.set({ topic }, counts.paused ? 1 : 0);
      },
    });
    new Gauge({
      name: named('queue_busy_groups'),
      help: 'Groups of the topic with a job running or waiting for its retry; read with queue_jobs.',
      labelNames: ['topic'],
      registers,
      async collect() {
        const stats = await readQueueStats();
        this.reset();
        for (const [topic, counts] of stats) this.set({ topic }, counts.busyGroups);
      },
    });

    new Gauge({
      name: named('queue_ready_groups'),
      help: 'Groups of the topic whose turn has come with a job due now (each can start a job now); read with queue_jobs.',
      labelNames: ['topic'],
      registers,
      async collect() {
        const stats = await readQueueStats();
        this.reset();
        for (const [topic, counts] of stats) this.set({ topic }, counts.readyGroups);
      },
    });

    this.listen('lock.acquired', ({ key, keyPattern, waitMs }) => {
      const pattern = this.patternOf(key, keyPattern);
      acquisitions.inc({ key_pattern: pattern });
      wait.observe({ key_pattern: pattern }, waitMs / 1000);
    });
    this.listen('lock.released', ({ key, keyPattern, holdMs }) => {
      if (holdMs !== undefined) hold.observe({ key_pattern: this.patternOf(key, keyPattern) }, holdMs / 1000);
    });
    this.listen('lock.lost', ({ key, keyPattern, holdMs }) => {
      const pattern = this.patternOf(key, keyPattern);
      losses.inc({ key_pattern: pattern });
      if (holdMs !== undefined) hold.observe({ key_pattern: pattern }, holdMs / 1000);
    });
    this.listen('lock.timeout', ({ key, keyPattern }) => timeouts.inc({ key_pattern: this.patternOf(key, keyPattern) }));
    this.listen('job.scheduled', ({ topic, status }) => {
      // 'scheduled' counts jobs created (or whose outcome is not known); an id that already had a job
      // scheduled nothing new and counts as 'duplicate', a replace as 'replaced'.
      outcomes.inc({
        topic: this.topicOf(topic),
        outcome: status === 'existing' ? 'duplicate' : status === 'replaced' ? 'replaced' : 'scheduled',
      });
    });
    this.listen('job.started', (event) => lateness.observe({ topic: this.topicOf(event.topic) }, event.latenessMs / 1000));
    this.listen('job.succeeded', (event) => {
      runTime.observe({ topic: this.topicOf(event.topic), outcome: 'succeeded' }, event.runMs / 1000);
      outcomes.inc({ topic: this.topicOf(event.topic), outcome: 'succeeded' });
    });
    this.listen('job.failed', (event) => {
      runTime.observe({ topic: this.topicOf(event.topic), outcome: 'failed' }, event.runMs / 1000);
      outcomes.inc({ topic: this.topicOf(event.topic), outcome: 'failed' });
    });
    this.listen('job.retried', (event) => outcomes.inc({ topic: this.topicOf(event.topic), outcome: 'retried' }));
    this.listen('job.dead', (event) => outcomes.inc({ topic: this.topicOf(event.topic), outcome: 'dead' }));
    this.listen('job.rate-limited', (event) => outcomes.inc({ topic: this.topicOf(event.topic), outcome: 'rate_limited' }));
    this.listen('job.log.dropped', (event) => logLinesDropped.inc({ topic: this.topicOf(event.topic) }, event.lines));
    this.listen('job.recovered', (event) => outcomes.inc({ topic: this.topicOf(event.topic), outcome: 'recovered' }));
    this.listen('job.schedule.retrying', (event) => afterCommitRetries.inc({ topic: this.topicOf(event.topic) }));
    this.listen('job.schedule.lost', (event) => afterCommitLost.inc({ topic: this.topicOf(event.topic) }, event.ids.length));
    this.listen('leadership.acquired', ({ key }) => {
      leadershipChanges.inc({ key, change: 'acquired' });
      leader.set({ key }, 1);
    });
    this.listen('leadership.lost', ({ key, reason }) => {
      leadershipChanges.inc({ key, change: reason });
      leader.set({ key }, 0);
    });
    this.listen('one-instance.acquired', ({ key }) => oneInstanceChanges.inc({ key, change: 'acquired' }));
    this.listen('one-instance.lost', ({ key, reason }) => oneInstanceChanges.inc({ key, change: reason }));
    this.listen('one-instance.skipped', ({ key, reason }) => oneInstanceSkipped.inc({ key, reason }));
  }

  /** Nest lifecycle hook: stops listening and removes the metrics from the registry. */
  onModuleDestroy(): void {
    for (const [event, listener] of this.listeners.splice(0)) this.events.off(event, listener as never);
    for (const name of this.names.splice(0)) this.registry.removeSingleMetric(name);
  }

  /**
   * The `key_pattern` label of `key`: the caller's own pattern (`@WithLock`'s template) when it gave
   * one, else the classifier's; bounded to `maxKeyPatterns` distinct values.
   */
  private patternOf(key: string, given: string | undefined): string {
    let pattern: string;
    try {
      pattern = given ?? this.classify(key);
    } catch {
      pattern = OTHER_PATTERN;
    }
    if (this.patterns.has(pattern)) return pattern;
    if (this.patterns.size >= this.maxPatterns) {
      if (!this.warnedOverflow) {
        this.warnedOverflow = true;
        this.logger.warn(
          `More than ${this.maxPatterns} distinct lock key patterns; new ones are counted as "${OTHER_PATTERN}". ` +
            'Pass RedisLockMetricsModule.forRoot({ keyPattern }) that maps keys to a few shapes.',
        );
      }
      return OTHER_PATTERN;
    }
    this.patterns.set(pattern, pattern);
    return pattern;
  }

  /**
   * The `topic` label of `topic`: its name for the first `maxTopics` topics kept, `<other>` after
   * that, with one warning. Kept first, at module init: the configured `topics`, then the
   * application's `@OnDelayed` handler topics and sharded topics; then topics in the order this
   * process first sees them. Topics are often named from tenant or user input; a label per topic
   * would grow the series and each scrape's Redis work without bound.
   */
  private topicOf(topic: string): string {
    if (this.topics.has(topic)) return topic;
    if (this.topics.size < this.maxTopics) {
      this.topics.add(topic);
      return topic;
    }
    if (!this.warnedTopicOverflow) {
      this.warnedTopicOverflow = true;
      this.logger.warn(
        `More than ${this.maxTopics} distinct topics; new ones are counted under topic="${OTHER_TOPIC}" and their queue depths ` +
          'are not read. Raise RedisLockMetricsModule.forRoot({ maxTopics }) if you have that many fixed topics, or list the ' +
          'ones to watch in ({ topics }).',
      );
    }
    return OTHER_TOPIC;
  }

  private listen<K extends RedisLockEventName>(event: K, listener: Listener<K>): void {
    this.events.on(event, listener as never);
    this.listeners.push([event, listener]);
  }

  /**
   * One `stats` call per kept topic (at most `maxTopics`, so a scrape's Redis work is bounded
   * however many topics exist), in parallel and bounded by `statsTimeout`, shared by the gauges of
   * one scrape (prom-client collects them at once): a scrape while Redis is down answers without
   * them (stale numbers would look healthy) instead of hanging. Topics that failed are left out.
   */
  private readQueueStats(): Promise<Map<string, DelayQueueStats>> {
    this.statsRead ??= this.collectQueueStats().finally(() => (this.statsRead = undefined));
    return this.statsRead;
  }

  private async collectQueueStats(): Promise<Map<string, DelayQueueStats>> {
    const read = new Map<string, DelayQueueStats>();
    const topics = [...this.topics];
    if (topics.length === 0) return read;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.options.statsTimeout ?? 2_000);
    });
    try {
      const results = await Promise.race([Promise.allSettled(topics.map((topic) => this.queue.stats(topic))), timeout]);
      // During a known Redis outage these are counted in its log (one line when Redis is back).
      const outages = this.internals?.connection.outages;
      if (results === 'timeout') {
        if (!outages?.skipped('metrics scrapes without queue depths'))
          this.logger.warn('Queue depths were not read in time for this scrape (is Redis reachable?).');
        return read;
      }
      results.forEach((result, i) => {
        if (result.status === 'rejected') {
          if (!outages?.absorb('queue depth reads failed', result.reason)) {
            this.logger.warn(`Queue depth of topic ${JSON.stringify(topics[i])} unavailable: ${errorMessage(result.reason)}`);
          }
          return;
        }
        read.set(topics[i], result.value);
      });
      return read;
    } finally {
      clearTimeout(timer);
    }
  }
}
