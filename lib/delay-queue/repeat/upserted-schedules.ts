import type { Logger } from '@nestjs/common';
import { errorMessage } from '../../core/errors/error-message.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { RedisOutageLog } from '../../core/redis/outage-log.js';
import type { TopicShards } from '../jobs/topic-shards.js';
import { readStoredForm, storedForm, type RepeatDefinition } from './repeat-definition.js';
import type { ScheduleRow, ScheduleStore } from './schedule-store.js';

/**
 * What this instance knows of a schedule it upserted: its definition in stored form (a string: no
 * parsed calendar), and `seenAt`, the latest server µs from which this instance knows that
 * definition was current (it stored it then, or saw that definition time stored with it).
 */
export interface UpsertedDefinition {
  readonly stored: string;
  seenAt: number;
}

/**
 * The schedules this instance upserted (`repeat()`, `@OnDelayed`, an outbox row it applied), by
 * topic then id, held against what the periodic check reads from Redis: when one is gone without a
 * removal (the server lost its data), it is stored again; when another definition is stored, the
 * later one wins. An entry leaves when the schedule is removed (here, or elsewhere and seen by the
 * check), so they follow what is stored. The twin of `RecentRemovals`, which keeps removals made
 * here through the same loss.
 */
export class UpsertedSchedules {
  private readonly defined = new Map<string, Map<string, UpsertedDefinition>>();
  /** Since when (this instance's monotonic ms) each missing schedule of `defined` has been seen missing, by `topic\nid`. */
  private readonly missingSince = new Map<string, number>();

  constructor(
    private readonly schedules: ScheduleStore,
    private readonly shards: TopicShards,
    private readonly logger: Logger,
    /** How long a schedule must have been missing before it is restored, in ms (read at each check). */
    private readonly restoreAfterMissing: () => number,
    /** Where a restore that failed to reach Redis during an outage is counted instead of logged. */
    private readonly outages?: RedisOutageLog,
  ) {}

  /** The upserted definitions of `topic` as they stand now (the check reads them once per shard). */
  of(topic: string): ReadonlyMap<string, UpsertedDefinition> | undefined {
    return this.defined.get(topic);
  }

  /** Forgets schedule `id`: it was removed here. */
  forget(topic: string, id: string): void {
    this.defined.get(topic)?.delete(id);
    this.missingSince.delete(`${topic}\n${id}`);
  }

  /**
   * The check read `row` from Redis, and this instance upserted that schedule (`entry`, from `of`):
   * the same definition agrees on the time from which it is known current; another one is settled.
   */
  async compare(topic: string, keys: TopicKeys, row: ScheduleRow, entry: UpsertedDefinition | undefined): Promise<void> {
    if (entry?.stored.startsWith(row.definition.fingerprint)) await this.agreeOnDefinitionTime(keys, row, entry);
    else if (entry && entry.seenAt > 0 && row.definedAt !== undefined) await this.settleDefinitions(topic, keys, row, entry);
  }

  /**
   * Stores again the schedules this instance upserted that the check did not find in Redis although
   * nobody removed them: the server lost its data (a restart without persistence, a failover that
   * lost the last writes). Every removal is recorded per schedule beside the shard's schedules (kept
   * REMOVED_SCHEDULE_KEPT_MS), also the removal of a schedule not stored, and lost data takes the
   * records with it. So a missing schedule with a record was removed: it is forgotten here and never
   * comes back; without one it was lost, and once it has been missing for RESTORE_AFTER_MISSING_MS
   * a restore (an upsert that only creates, and stores nothing over a removal recorded at or after
   * this instance last saw the schedule, in the same script) stores it as `repeat()` would, first tick
   * after the server's now. Each instance restores what it upserted, whichever checks first. Costs
   * nothing while every schedule is there (one read and one script per missing one otherwise).
   * `registering`: a schedule whose `@OnDelayed` registration is still retried is not lost.
   */
  async restoreLost(topic: string, seen: ReadonlySet<string>, registering: (id: string) => boolean): Promise<void> {
    const definitions = this.defined.get(topic);
    if (!definitions) return;
    for (const [id, entry] of [...definitions]) {
      const missingKey = `${topic}\n${id}`;
      if (seen.has(id) || registering(id)) {
        this.missingSince.delete(missingKey);
        continue;
      }
      try {
        const definition = readStoredForm(id, entry.stored);
        if (!definition) continue;
        const keys = this.shards.forSchedule(topic, id);
        // The check reads at most 1000 schedules per shard (ScheduleStore.read): look this one up by id.
        const [, rows] = await this.schedules.read(keys, id);
        if (rows.length > 0) {
          this.missingSince.delete(missingKey);
          continue;
        }
        // Removed since this instance last knew its definition current: forget it at once.
        const removedAt = await this.schedules.removedAt(keys, id);
        if (removedAt !== undefined && removedAt >= entry.seenAt) {
          this.missingSince.delete(missingKey);
          if (definitions.get(id) === entry) definitions.delete(id);
          continue;
        }
        const since = this.missingSince.get(missingKey);
        if (since === undefined) this.missingSince.set(missingKey, performance.now());
        if (since === undefined || performance.now() - since < this.restoreAfterMissing()) continue;
        const { info, kept, created, runsLost } = await this.schedules.store(keys, topic, definition, { seenAt: entry.seenAt });
        this.missingSince.delete(missingKey);
        if (!info && !kept && definitions.get(id) === entry) definitions.delete(id);
        const lost =
          `Repeat schedule ${JSON.stringify(id)} of topic ${JSON.stringify(topic)} was gone from Redis without ` +
          `a removal (the server lost its data?)`;
        if (runsLost)
          this.logger.warn(`${lost}; not stored again, as its limit's runs were lost with the data: repeat() starts it again from 0 runs.`);
        if (!info || !created) continue;
        this.logger.warn(`${lost}; stored it again from this instance's definition, next tick ${info.nextRunAt.toISOString()}.`);
      } catch (error) {
        if (this.outages?.absorb('repeat checks skipped', error)) continue;
        this.logger.debug(
          `Restoring repeat schedule ${JSON.stringify(id)} of topic ${JSON.stringify(topic)} failed: ${errorMessage(error)}`,
        );
      }
    }
  }

  /**
   * Redis holds another definition than this instance (seenAt > 0: not its own repeat() under way).
   * Redefined elsewhere after this instance knew its own current: forgotten here. Stored from a
   * definition known current only from before this instance's (a restore by an instance that had
   * not seen the later repeat()): this instance's replaces it, as a restore.
   */
  private async settleDefinitions(topic: string, keys: TopicKeys, row: ScheduleRow, entry: UpsertedDefinition): Promise<void> {
    if (row.definedAt! > entry.seenAt) {
      if (this.defined.get(topic)?.get(row.id) === entry) this.defined.get(topic)!.delete(row.id);
      return;
    }
    const definition = readStoredForm(row.id, entry.stored);
    if (row.definedAt! < entry.seenAt && definition) await this.schedules.store(keys, topic, definition, { seenAt: entry.seenAt });
  }

  /**
   * This instance and Redis hold the same definition: each learns the later time from which it is
   * known current (a restore by an instance that had not seen a later repeat() stores an older one).
   */
  private async agreeOnDefinitionTime(keys: TopicKeys, row: ScheduleRow, entry: { seenAt: number }): Promise<void> {
    if (row.definedAt !== undefined && row.definedAt >= entry.seenAt) entry.seenAt = row.definedAt;
    else if (entry.seenAt > 0) await this.schedules.confirmDefinition(keys, row.id, entry.seenAt);
  }

  /** Remembers `definition` as upserted here now; the entry's `seenAt` is for the caller to raise once Redis stored it. */
  remember(topic: string, definition: RepeatDefinition): { seenAt: number } {
    let definitions = this.defined.get(topic);
    if (!definitions) this.defined.set(topic, (definitions = new Map()));
    const stored = storedForm(definition);
    const prior = definitions.get(definition.id);
    // The same definition keeps what is known of it; another one is not stored yet.
    const entry = { stored, seenAt: prior?.stored === stored ? prior.seenAt : 0 };
    definitions.set(definition.id, entry);
    return entry;
  }
}
