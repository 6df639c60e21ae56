import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { errorMessage } from '../../core/errors/error-message.js';
import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../../core/options/redis-lock-config.js';
import { RedisConnection } from '../../core/connection/redis-connection.js';
import type { RedisOutageLog } from '../../core/redis/outage-log.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { RepeatInfo, RepeatOptions, RepeatSchedule } from '../interfaces/repeat-options.interface.js';
import { parseTickJobId } from '../jobs/tick-job-id.js';
import { TopicShards } from '../jobs/topic-shards.js';
import type { WriteFence } from '../jobs/write-fence.js';
import { nextTickWithin } from './repeat-bounds.js';
import { prepareRepeat, type RepeatDefinition } from './repeat-definition.js';
import { MISSED_TICK_AFTER_MS } from './tick-calendar.js';
import { RecentRemovals } from './recent-removals.js';
import { ScheduleStore, type ScheduleRow } from './schedule-store.js';
import { UpsertedSchedules } from './upserted-schedules.js';

/**
 * How often each instance looks over the schedules of the topics it called `repeat()` for or has run
 * a tick of, in ms: a
 * tick job that was cancelled, deleted from the dead letters or is stale after downtime is followed
 * by the next tick within this time. Normal ticks never wait for it (the consumer that claims a tick
 * enqueues the next one).
 */
const REPEAT_CHECK_INTERVAL_MS = 5_000;

/**
 * How long after a claimed tick's time the periodic check queues the next tick itself when the
 * claimer has not (it queues it as it claims, within a round trip when its link is well).
 */
const ADVANCE_TAKEOVER_MS = 1_000;

/**
 * How long a schedule this instance upserted must have been missing from Redis (without a removal
 * record) before the check restores it, in ms: longer than a check interval, so the instance that
 * removed it just before Redis lost its data has re-recorded the removal by then (RecentRemovals).
 */
const RESTORE_AFTER_MISSING_MS = REPEAT_CHECK_INTERVAL_MS + 1_000;

/**
 * Repeatable delayed jobs: the schedules live in Redis, next to the topic's jobs (one hash of
 * definitions and one zset of queued ticks per shard). Each tick is one job, `repeat:<id>@<tick>`,
 * enqueued by a compare-and-set on the schedule's stored tick (scripts/advance-repeat.lua.ts), so a
 * tick is enqueued once whatever the number of instances, restarts, re-sent commands or skew, and
 * runs with the queue's at-least-once delivery. Tick times are computed from the Redis server's
 * TIME; no instance keeps a timer per schedule.
 *
 * Who advances a schedule: `repeat()` (the first tick), the consumer that claims a tick (the next
 * one, before the handler runs), and a periodic check on every instance (a tick job gone without
 * being claimed, or stale after downtime).
 */
@Injectable()
export class RepeatScheduler implements BeforeApplicationShutdown {
  private readonly logger = new Logger('DelayQueue');
  /** Topics whose schedules this instance checks periodically (it repeats them, or has run one of their ticks). */
  private readonly watched = new Set<string>();
  /** `@OnDelayed` schedules whose registration failed (Redis unreachable at bootstrap): retried by the check. */
  private readonly pending = new Map<string, () => Promise<unknown>>();
  /** RESTORE_AFTER_MISSING_MS; tests that order the checks themselves set it to 0 (restore at the second check). */
  restoreAfterMissingMs = RESTORE_AFTER_MISSING_MS;
  private readonly schedules: ScheduleStore;
  private readonly removals: RecentRemovals;
  /** What this instance upserted: restored by the check after Redis lost it. */
  private readonly upserted: UpsertedSchedules;
  private timer?: NodeJS.Timeout;
  /** The check under way, if any. */
  private checking?: Promise<void>;
  private stopped = false;
  private periodic = true;
  /** Where failures to reach Redis go during a known outage (counted there, not warned here). */
  private readonly outages?: RedisOutageLog;

  constructor(
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    connection: RedisConnection,
    private readonly shards: TopicShards,
  ) {
    this.outages = connection.outages;
    this.schedules = new ScheduleStore(connection);
    this.removals = new RecentRemovals(connection, shards);
    this.upserted = new UpsertedSchedules(this.schedules, shards, this.logger, () => this.restoreAfterMissingMs, this.outages);
  }

  /** Validates a schedule without writing anything (for `@OnDelayed` at init). */
  prepare(topic: string, schedule: RepeatSchedule, options: RepeatOptions | undefined, location?: string): RepeatDefinition {
    return prepareRepeat(topic, schedule, options, this.config.delayQueue, location);
  }

  /**
   * Stores (or keeps, or replaces) a schedule and makes sure its next tick is queued. With a `fence`
   * (an outbox row's application) the script changes nothing if the row was applied already or the
   * fence's deadline has passed (`WriteFenceExpiredError`).
   */
  async upsert(topic: string, definition: RepeatDefinition, fence?: WriteFence): Promise<RepeatInfo> {
    const keys = this.shards.forSchedule(topic, definition.id);
    this.watch(topic);
    const entry = this.upserted.remember(topic, definition);
    const { info, unchanged, nowMs, definedAt } = await this.schedules.store(keys, topic, definition, undefined, fence);
    if (definedAt !== undefined) {
      entry.seenAt = Math.max(entry.seenAt, definedAt);
      this.removals.drop(topic, definition.id); // stored after any removal made here
    }
    if (unchanged) await this.reconcile(keys, unchanged, nowMs);
    return info!;
  }

  /** Registers an `@OnDelayed` schedule at bootstrap; a failure is logged and retried by the periodic check. */
  async register(topic: string, definition: RepeatDefinition, source: string): Promise<void> {
    const attempt = async () => {
      await this.upsert(topic, definition);
      this.pending.delete(`${topic}\n${definition.id}`);
    };
    try {
      await attempt();
    } catch (error) {
      // A definition Redis refuses (its bounds leave no tick after the server's now) stays refused.
      if (error instanceof InvalidOptionsError)
        return this.logger.error(`${source}: its repeat schedule is not registered: ${error.message}`);
      if (!this.outages?.absorb('repeat registrations retried', error)) {
        this.logger.warn(
          `${source}: could not register its repeat schedule yet (${errorMessage(error)}); retrying every ${REPEAT_CHECK_INTERVAL_MS} ms.`,
        );
      }
      this.pending.set(`${topic}\n${definition.id}`, attempt);
      this.watch(topic);
    }
  }

  /**
   * Deletes a schedule and its waiting tick job. Resolves to whether it existed. With a `fence` (an
   * outbox row's application) its record is the call's record, kept after the call, and a removal
   * past its deadline changes nothing (`WriteFenceExpiredError`). The removal is remembered here for
   * a while (RecentRemovals), so a loss of Redis's data right after it does not undo it.
   */
  async remove(topic: string, id: string, fence?: WriteFence): Promise<boolean> {
    // The script records the removal: the other instances that upserted the schedule forget it
    // instead of restoring it, also when it was already lost with the data.
    const { existed, removedAt } = await this.schedules.remove(this.shards.forSchedule(topic, id), id, fence);
    // Forgotten here once removed (a removal that failed leaves the definition to restore).
    this.upserted.forget(topic, id);
    if (removedAt !== undefined) this.removals.add(topic, id, removedAt);
    this.startChecks();
    return existed;
  }

  /** Every schedule of `topic` (at most 1000 per shard), by next tick. */
  async list(topic: string): Promise<RepeatInfo[]> {
    const perShard = await Promise.all(this.shards.all(topic).map((keys) => this.schedules.read(keys, '')));
    return perShard
      .flatMap(([nowMs, rows]) => rows.map((row) => this.schedules.info(topic, row.definition, row.tick, row, nowMs)))
      .sort((x, y) => x.nextRunAt.getTime() - y.nextRunAt.getTime());
  }

  /**
   * Called by a consumer of `topic` for each job it claimed, before the handler runs: for a tick job
   * whose tick is still the schedule's queued one, enqueues the next tick. Undefined (nothing to wait
   * for) for other jobs. Never rejects: a failure is logged and repaired by the periodic check.
   */
  afterClaim(topic: string, jobId: string): Promise<void> | undefined {
    const tick = parseTickJobId(jobId);
    if (!tick) return undefined;
    // A topic with schedules: checked from now on (a topic without any costs nothing).
    this.watch(topic);
    return this.advanceFrom(topic, tick.scheduleId, tick.tickMs).catch((error: unknown) => {
      if (this.outages?.absorb('repeat ticks left to the periodic check', error)) return;
      this.logger.warn(
        `Could not enqueue the next tick of schedule ${JSON.stringify(tick.scheduleId)} of topic ${JSON.stringify(topic)}` +
          `: ${errorMessage(error)}`,
      );
    });
  }

  /** Includes `topic` in the periodic check of this instance. */
  watch(topic: string): void {
    this.watched.add(topic);
    this.startChecks();
  }

  /** Stops the periodic check for good; `checkAll()` still runs (tests that order the checks of several instances). */
  stopPeriodicChecks(): void {
    this.periodic = false;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Starts the periodic check (also for an instance that only removes schedules: it re-records its removals). */
  private startChecks(): void {
    if (this.timer || this.stopped || !this.periodic) return;
    this.timer = setInterval(() => {
      if (!this.checking) void this.checkAll();
    }, REPEAT_CHECK_INTERVAL_MS);
    this.timer.unref();
  }

  beforeApplicationShutdown(): void {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * One pass of the periodic check over the watched topics (also run by tests). A check already
   * under way may have read Redis before the caller's last change: it is awaited, then a new one runs.
   */
  async checkAll(): Promise<void> {
    while (this.checking) await this.checking;
    if (this.stopped) return;
    this.checking = this.check().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async check(): Promise<void> {
    for (const retry of [...this.pending.values()]) await retry().catch(() => undefined);
    // Before any restore of this pass: a removal made here just before a loss of data is recorded again.
    await this.removals.reassert().catch((error: unknown) => this.skippedCheck(error, 'Re-recording recent schedule removals skipped'));
    for (const topic of this.watched) {
      const seen = new Set<string>();
      // What was not read cannot be told missing: a topic whose read failed restores nothing this pass.
      let readAll = true;
      for (const keys of this.shards.all(topic)) {
        try {
          const [nowMs, rows] = await this.schedules.read(keys, '');
          const definitions = this.upserted.of(topic);
          for (const row of rows) {
            seen.add(row.id);
            await this.upserted.compare(topic, keys, row, definitions?.get(row.id));
            await this.reconcile(keys, row, nowMs).catch((error: unknown) =>
              this.skippedCheck(error, `Repeat check of schedule ${JSON.stringify(row.id)} of topic ${JSON.stringify(topic)} skipped`),
            );
          }
        } catch (error) {
          readAll = false;
          this.skippedCheck(error, `Repeat check of topic ${JSON.stringify(topic)} skipped`);
        }
      }
      if (readAll) await this.upserted.restoreLost(topic, seen, (id) => this.pending.has(`${topic}\n${id}`));
    }
  }

  /** A part of the periodic check that failed: counted into a known outage, else logged at debug level (the next pass retries). */
  private skippedCheck(error: unknown, what: string): void {
    if (this.outages?.absorb('repeat checks skipped', error)) return;
    this.logger.debug(`${what}: ${errorMessage(error)}`);
  }

  private async advanceFrom(topic: string, scheduleId: string, tickMs: number): Promise<void> {
    const keys = this.shards.forSchedule(topic, scheduleId);
    const [nowMs, [row]] = await this.schedules.read(keys, scheduleId);
    if (!row || row.tick !== tickMs) return; // advanced already, changed or removed
    const { calendar, catchUp, bounds } = row.definition;
    // No next tick (a bounded schedule finished): the claim is still recorded as its last run.
    await this.schedules.advance(keys, row, nextTickWithin(calendar, catchUp, bounds, tickMs, nowMs, row.queued), false, true);
  }

  /**
   * Advances a schedule whose queued tick will not be claimed in time: its job is gone (cancelled,
   * dead-letter deleted) or dead, or it still waits although a later tick is already missed (see
   * MISSED_TICK_AFTER_MS) and the catch-up rule is not 'all' (downtime: the stale job is replaced by
   * the rule's tick); or its tick was claimed, the next tick is due, and the claimer has not queued
   * it ADVANCE_TAKEOVER_MS after the claimed tick (its link stalled or it died between the claim and
   * the advance): the advance is a compare-and-set on the stored tick, so the claimer's own, if it
   * comes later, changes nothing.
   */
  private async reconcile(keys: TopicKeys, row: ScheduleRow, nowMs: number): Promise<void> {
    const { calendar, catchUp } = row.definition;
    // The tick after a queued one that is not yet past the threshold is not missed either: testing
    // that first spares the calendar (a cron's next tick is costly) for every healthy schedule.
    const stale =
      row.state === 'waiting' &&
      catchUp !== 'all' &&
      row.tick < nowMs - MISSED_TICK_AFTER_MS &&
      (calendar.after(row.tick) ?? Infinity) <= nowMs - MISSED_TICK_AFTER_MS;
    const unadvanced = row.state === 'active' && row.tick < nowMs - ADVANCE_TAKEOVER_MS && (calendar.after(row.tick) ?? Infinity) <= nowMs;
    if (!stale && !unadvanced && (row.state === 'waiting' || row.state === 'active')) return;
    await this.schedules.advance(
      keys,
      row,
      nextTickWithin(calendar, catchUp, row.definition.bounds, row.tick, nowMs, row.queued),
      stale,
      unadvanced,
    );
  }
}
