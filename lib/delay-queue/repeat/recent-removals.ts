import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { RedisConnection } from '../../core/connection/redis-connection.js';
import type { TopicShards } from '../jobs/topic-shards.js';
import { reassertRemovalsScript } from '../scripts/reassert-removals.lua.js';

/**
 * How long an instance remembers a schedule removal it made, in ms. Every other instance that
 * upserted the schedule sees the removal's record at its next check (every 5 s) and forgets the
 * schedule; until then a loss of Redis's data would take the record with it and let that instance
 * restore the schedule. Twelve checks: an instance paused or cut off for most of a minute still
 * finds the removal recorded.
 */
export const REMOVAL_REMEMBERED_MS = 60_000;

/** Removals sent to Redis per script call. */
const REASSERT_BATCH = 200;

interface Removal {
  /** When Redis removed it (server µs). */
  readonly removedAt: number;
  /** When this instance forgets it (ms of its monotonic clock). */
  readonly forgetAt: number;
}

/**
 * The schedule removals this instance made in the last REMOVAL_REMEMBERED_MS, re-recorded in Redis at
 * each check (a no-op while the records are there): after Redis lost its data, a removal made just
 * before stays removed although instances that upserted the schedule had not seen it yet. A restore
 * those instances made first is undone when its definition is older than the removal; a `repeat()`
 * after the removal wins.
 */
export class RecentRemovals {
  private readonly byTopic = new Map<string, Map<string, Removal>>();

  constructor(
    private readonly connection: RedisConnection,
    private readonly shards: TopicShards,
  ) {}

  add(topic: string, id: string, removedAt: number): void {
    let removals = this.byTopic.get(topic);
    if (!removals) this.byTopic.set(topic, (removals = new Map()));
    removals.delete(id); // re-inserted last: the map stays in forgetting order
    removals.set(id, { removedAt, forgetAt: performance.now() + REMOVAL_REMEMBERED_MS });
  }

  /** Forgets a removal: the schedule was upserted here since. */
  drop(topic: string, id: string): void {
    this.byTopic.get(topic)?.delete(id);
  }

  /** Records again each remembered removal whose record is gone; forgets expired and superseded ones. */
  async reassert(): Promise<void> {
    const now = performance.now();
    for (const [topic, removals] of this.byTopic) {
      for (const [id, removal] of removals) {
        if (removal.forgetAt > now) break;
        removals.delete(id);
      }
      if (removals.size === 0) {
        this.byTopic.delete(topic);
        continue;
      }
      const byShard = new Map<string, { keys: TopicKeys; entries: [string, Removal][] }>();
      for (const entry of removals) {
        const keys = this.shards.forSchedule(topic, entry[0]);
        const shard = byShard.get(keys.jobs) ?? { keys, entries: [] };
        byShard.set(keys.jobs, shard);
        shard.entries.push(entry);
      }
      for (const { keys, entries } of byShard.values()) {
        for (let from = 0; from < entries.length; from += REASSERT_BATCH) {
          const batch = entries.slice(from, from + REASSERT_BATCH);
          const records = batch.map(([id, removal]) => ({ id, removedAt: String(removal.removedAt) }));
          const statuses = await reassertRemovalsScript.call(this.connection, keys, {}, records);
          statuses.forEach((status, i) => {
            const [id, removal] = batch[i];
            if (status === 'superseded' && removals.get(id) === removal) removals.delete(id);
          });
        }
      }
    }
  }
}
