import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { errorMessage } from '../../core/errors/error-message.js';
import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from '../../core/options/redis-lock-config.js';
import { RedisConnection } from '../../core/redis/redis-connection.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { RepeatInfo, RepeatOptions, RepeatSchedule } from '../interfaces/repeat-options.interface.js';
import { newOperationId } from '../jobs/operation-record.js';
import { parseTickJobId } from '../jobs/tick-job-id.js';
import { TopicShards } from '../jobs/topic-shards.js';
import { advanceRepeatScript } from '../scripts/advance-repeat.lua.js';
import { readRepeatsScript } from '../scripts/read-repeats.lua.js';
import { removeRepeatScript } from '../scripts/remove-repeat.lua.js';
import { upsertRepeatScript } from '../scripts/upsert-repeat.lua.js';
import { WriteFenceExpiredError, type WriteFence } from '../jobs/write-fence.js';
import { prepareRepeat, readStoredForm, storedForm, type RepeatDefinition } from './repeat-definition.js';
import { repeatScriptKeys } from '../jobs/script-keys.js';
import { MISSED_TICK_AFTER_MS } from './tick-calendar.js';

/**
 * How often each instance looks over the schedules of the topics it called `repeat()` for or has run
 * a tick of, in ms: a
 * tick job that was cancelled, deleted from the dead letters or is stale after downtime is followed
 * by the next tick within this time. Normal ticks never wait for it (the consumer that claims a tick
 * enqueues the next one).
 */
const REPEAT_CHECK_INTERVAL_MS = 5_000;

/** Schedules read per shard by one check. */
const CHECK_BATCH = 1000;

type QueuedTickState = 'waiting' | 'active' | 'dead' | 'gone';
/** The queued tick's state as read-repeats.lua.ts answers it (a one-letter code, '' for gone). */
const TICK_STATES: Readonly<Record<string, QueuedTickState>> = { w: 'waiting', a: 'active', d: 'dead' };

/** One schedule as read from a shard. */
interface ScheduleRow {
  readonly id: string;
  readonly definition: RepeatDefinition;
  readonly tick: number;
  /** Where the queued tick's job is: waiting, active, dead, or gone (ran or was removed). */
  readonly state: QueuedTickState;
  /** The last tick a consumer claimed, if any. */
  readonly lastRun?: number;
}

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
  /**
   * The schedules this instance upserted (`repeat()`, `@OnDelayed`, an outbox row it applied), by
   * topic then id, in their stored form (a string: no parsed calendar): when the check finds one gone
   * from Redis without a removal (the server lost its data), it stores it again. An entry leaves when
   * the schedule is removed (here, or elsewhere and seen by the check), so they follow what is stored.
   */
  private readonly defined = new Map<string, Map<string, { readonly stored: string }>>();
  private timer?: NodeJS.Timeout;
  /** The check under way, if any. */
  private checking?: Promise<void>;
  private stopped = false;

  constructor(
    @Inject(REDIS_LOCK_CONFIG) private readonly config: RedisLockConfig,
    private readonly connection: RedisConnection,
    private readonly shards: TopicShards,
  ) {}

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
    this.remember(topic, definition);
    const { info } = await this.store(keys, topic, definition, false, fence);
    return info!;
  }

  /**
   * Runs the upsert script until its first tick is ahead of the server's clock. A restore only
   * creates: `info` is undefined when the schedule was removed, `kept` when another definition is
   * stored (see upsert-repeat.lua.ts); `created` when this call stored it.
   */
  private async store(
    keys: TopicKeys,
    topic: string,
    definition: RepeatDefinition,
    restore: boolean,
    fence?: WriteFence,
  ): Promise<{ info?: RepeatInfo; kept?: boolean; created?: boolean }> {
    let [nowMs, rows] = await this.read(keys, definition.id);
    for (let attempt = 0; ; attempt++) {
      const current = rows[0];
      // A fenced upsert always goes through the script, which records the row as applied.
      if (current && current.definition.fingerprint === definition.fingerprint && !fence) {
        await this.reconcile(keys, current, nowMs);
        return { info: this.info(topic, current.definition, current.tick, current.lastRun) };
      }
      if (current && restore) return { kept: true };
      const firstTick = definition.calendar.after(nowMs);
      if (firstTick === null) throw new InvalidOptionsError('repeat.schedule', 'the schedule has no future tick');
      const [status, tick, serverNow] = await upsertRepeatScript.run<[number, number, number]>(
        this.connection.client,
        repeatScriptKeys(keys, fence?.recordId),
        [definition.id, storedForm(definition), firstTick, definition.tail, restore ? '1' : '0', fence ? fence.deadline : ''],
      );
      if (status === -3) throw new WriteFenceExpiredError();
      if (status === 4) return { info: this.info(topic, definition, Number(tick), current?.lastRun) };
      if (status === -2) return {};
      if (status === 3) return { kept: true };
      if (status !== -1) return { info: this.info(topic, definition, Number(tick), current?.lastRun), created: status !== 0 };
      if (attempt >= 5) throw new Error(`repeat(${JSON.stringify(topic)}): the server clock kept passing the first tick`);
      nowMs = Number(serverNow);
      [, rows] = await this.read(keys, definition.id);
    }
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
      this.logger.warn(`${source}: could not register its repeat schedule yet (${errorMessage(error)}); retrying every ${REPEAT_CHECK_INTERVAL_MS} ms.`);
      this.pending.set(`${topic}\n${definition.id}`, attempt);
      this.watch(topic);
    }
  }

  /**
   * Deletes a schedule and its waiting tick job. Resolves to whether it existed. With a `fence` (an
   * outbox row's application) its record is the call's record, kept after the call, and a removal
   * past its deadline changes nothing (`WriteFenceExpiredError`).
   */
  async remove(topic: string, id: string, fence?: WriteFence): Promise<boolean> {
    this.defined.get(topic)?.delete(id);
    const shard = this.shards.forSchedule(topic, id);
    // The script records the removal: the other instances that upserted the schedule forget it
    // instead of restoring it, also when it was already lost with the data.
    const keys = repeatScriptKeys(shard, fence?.recordId ?? newOperationId());
    const existed = await removeRepeatScript.run<number>(this.connection.client, keys, fence ? [id, fence.deadline] : [id]);
    if (existed === -3) throw new WriteFenceExpiredError();
    if (!fence) await this.connection.client.del(keys[5]).catch(() => undefined);
    return existed === 1;
  }

  /** Every schedule of `topic` (at most 1000 per shard), by next tick. */
  async list(topic: string): Promise<RepeatInfo[]> {
    const perShard = await Promise.all(this.shards.all(topic).map((keys) => this.read(keys, '')));
    return perShard
      .flatMap(([, rows]) => rows.map((row) => this.info(topic, row.definition, row.tick, row.lastRun)))
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
    return this.advanceFrom(topic, tick.scheduleId, tick.tickMs).catch((error: unknown) =>
      this.logger.warn(`Could not enqueue the next tick of schedule ${JSON.stringify(tick.scheduleId)} of topic ${JSON.stringify(topic)}: ${errorMessage(error)}`),
    );
  }

  /** Includes `topic` in the periodic check of this instance. */
  watch(topic: string): void {
    this.watched.add(topic);
    if (this.timer || this.stopped) return;
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
    for (const topic of this.watched) {
      const seen = new Set<string>();
      for (const keys of this.shards.all(topic)) {
        try {
          const [nowMs, rows] = await this.read(keys, '');
          for (const row of rows) {
            seen.add(row.id);
            await this.reconcile(keys, row, nowMs).catch((error: unknown) =>
              this.logger.debug(`Repeat check of schedule ${JSON.stringify(row.id)} of topic ${JSON.stringify(topic)} skipped: ${errorMessage(error)}`),
            );
          }
        } catch (error) {
          this.logger.debug(`Repeat check of topic ${JSON.stringify(topic)} skipped: ${errorMessage(error)}`);
        }
      }
      await this.restoreLost(topic, seen);
    }
  }

  /**
   * Stores again the schedules this instance upserted that the check did not find in Redis although
   * nobody removed them: the server lost its data (a restart without persistence, a failover that
   * lost the last writes). Every removal is recorded per schedule beside the shard's schedules (kept
   * REMOVED_SCHEDULE_KEPT_MS), also the removal of a schedule not stored, and lost data takes the
   * records with it. So a missing schedule with a record was removed: it is forgotten here and never
   * comes back; without one it was lost, and a restore (an upsert that only creates, and stores
   * nothing over a removal recorded meanwhile, in the same script) stores it as `repeat()` would, first
   * tick after the server's now. Each instance restores what it upserted, whichever checks first.
   * Costs nothing while every schedule is there (one read and one script per missing one otherwise).
   */
  private async restoreLost(topic: string, seen: ReadonlySet<string>): Promise<void> {
    const definitions = this.defined.get(topic);
    if (!definitions) return;
    for (const [id, entry] of [...definitions]) {
      if (seen.has(id) || this.pending.has(`${topic}\n${id}`)) continue;
      try {
        const definition = readStoredForm(id, entry.stored);
        if (!definition) continue;
        const keys = this.shards.forSchedule(topic, id);
        // The check reads at most CHECK_BATCH schedules per shard: look this one up by id.
        const [, rows] = await this.read(keys, id);
        if (rows.length > 0) continue;
        const { info, kept, created } = await this.store(keys, topic, definition, true);
        if (!info && !kept && definitions.get(id) === entry) definitions.delete(id);
        if (!info || !created) continue;
        this.logger.warn(
          `Repeat schedule ${JSON.stringify(id)} of topic ${JSON.stringify(topic)} was gone from Redis without a removal ` +
            `(the server lost its data?); stored it again from this instance's definition, next tick ${info.nextRunAt.toISOString()}.`,
        );
      } catch (error) {
        this.logger.debug(`Restoring repeat schedule ${JSON.stringify(id)} of topic ${JSON.stringify(topic)} failed: ${errorMessage(error)}`);
      }
    }
  }

  private remember(topic: string, definition: RepeatDefinition): void {
    let definitions = this.defined.get(topic);
    if (!definitions) this.defined.set(topic, (definitions = new Map()));
    definitions.set(definition.id, { stored: storedForm(definition) });
  }

  private async advanceFrom(topic: string, scheduleId: string, tickMs: number): Promise<void> {
    const keys = this.shards.forSchedule(topic, scheduleId);
    const [nowMs, [row]] = await this.read(keys, scheduleId);
    if (!row || row.tick !== tickMs) return; // advanced already, changed or removed
    const next = row.definition.calendar.nextToEnqueue(tickMs, nowMs, row.definition.catchUp);
    if (next !== null) await this.advance(keys, row, next, false, true);
  }

  /**
   * Advances a schedule whose queued tick will not be claimed in time: its job is gone (cancelled,
   * dead-letter deleted) or dead, or it still waits although a later tick is already missed (see
   * MISSED_TICK_AFTER_MS) and the catch-up rule is not 'all' (downtime: the stale job is replaced by
   * the rule's tick).
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
    if (!stale && (row.state === 'waiting' || row.state === 'active')) return;
    const next = calendar.nextToEnqueue(row.tick, nowMs, catchUp);
    if (next !== null) await this.advance(keys, row, next, stale);
  }

  private async advance(keys: TopicKeys, row: ScheduleRow, next: number, dropStale: boolean, claimed = false): Promise<void> {
    await advanceRepeatScript.run(this.connection.client, repeatScriptKeys(keys), [
      row.id,
      row.definition.fingerprint,
      row.tick,
      next,
      row.definition.tail,
      dropStale ? '1' : '0',
      claimed ? '1' : '0',
    ]);
  }

  private async read(keys: TopicKeys, id: string): Promise<[number, ScheduleRow[]]> {
    const [nowMs, flat] = await readRepeatsScript.run<[number, string[]]>(this.connection.client, repeatScriptKeys(keys), [id, CHECK_BATCH]);
    const rows: ScheduleRow[] = [];
    for (let i = 0; i < flat.length; i += 5) {
      const definition = readStoredForm(flat[i], flat[i + 1]);
      if (!definition) continue;
      const lastRun = flat[i + 4] === '' ? undefined : Number(flat[i + 4]);
      rows.push({ id: flat[i], definition, tick: Number(flat[i + 2]), state: TICK_STATES[flat[i + 3]] ?? 'gone', lastRun });
    }
    return [Number(nowMs), rows];
  }

  private info(topic: string, definition: RepeatDefinition, tick: number, lastRun?: number): RepeatInfo {
    const info = { topic, id: definition.id, schedule: definition.schedule, catchUp: definition.catchUp, nextRunAt: new Date(tick) };
    return lastRun === undefined ? info : { ...info, lastRunAt: new Date(lastRun) };
  }
}
