import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { RedisConnection } from '../../core/redis/redis-connection.js';
import type { RepeatInfo } from '../interfaces/repeat-options.interface.js';
import { newOperationId } from '../jobs/operation-record.js';
import { repeatScriptKeys } from '../jobs/script-keys.js';
import { WriteFenceExpiredError, type WriteFence } from '../jobs/write-fence.js';
import { advanceRepeatScript } from '../scripts/advance-repeat.lua.js';
import { readRepeatsScript } from '../scripts/read-repeats.lua.js';
import { removeRepeatScript } from '../scripts/remove-repeat.lua.js';
import { upsertRepeatScript } from '../scripts/upsert-repeat.lua.js';
import { readStoredForm, storedForm, type RepeatDefinition } from './repeat-definition.js';

/** Schedules read per shard by one call without an id. */
const READ_BATCH = 1000;

type QueuedTickState = 'waiting' | 'active' | 'dead' | 'gone';
/** The queued tick's state as read-repeats.lua.ts answers it (a one-letter code, '' for gone). */
const TICK_STATES: Readonly<Record<string, QueuedTickState>> = { w: 'waiting', a: 'active', d: 'dead' };

/** One schedule as read from a shard. */
export interface ScheduleRow {
  readonly id: string;
  readonly definition: RepeatDefinition;
  readonly tick: number;
  /** Where the queued tick's job is: waiting, active, dead, or gone (ran or was removed). */
  readonly state: QueuedTickState;
  /** The last tick a consumer claimed, if any. */
  readonly lastRun?: number;
  /** From when its definition is known current (server µs; see repeat-lua-snippets.ts), if recorded. */
  readonly definedAt?: number;
}

/** What a store answered (see ScheduleStore.store). */
export interface StoreOutcome {
  readonly info?: RepeatInfo;
  readonly kept?: boolean;
  readonly created?: boolean;
  /** The same definition was stored already: nothing was written (its tick may need a reconcile). */
  readonly unchanged?: ScheduleRow;
  /** The server ms of the last read or write. */
  readonly nowMs: number;
  /** From when the stored definition is known current (server µs), when this definition is stored. */
  readonly definedAt?: number;
}

/**
 * The repeat scripts of one shard, called as the scheduler decides: read schedules, store one (a
 * `repeat()`, an outbox row's application, a restore), remove one, advance one's tick. Each script is
 * one atomic step; this class holds no state.
 */
export class ScheduleStore {
  constructor(private readonly connection: RedisConnection) {}

  /** The server's now (ms, and µs) and the shard's schedules: `id` alone, or the first READ_BATCH by next tick. */
  async read(keys: TopicKeys, id: string): Promise<[number, ScheduleRow[], number]> {
    const [nowMs, flat, nowUs] = await readRepeatsScript.run<[number, string[], number]>(this.connection.client, repeatScriptKeys(keys), [id, READ_BATCH]);
    const rows: ScheduleRow[] = [];
    for (let i = 0; i < flat.length; i += 6) {
      const definition = readStoredForm(flat[i], flat[i + 1]);
      if (!definition) continue;
      const lastRun = flat[i + 4] === '' ? undefined : Number(flat[i + 4]);
      const definedAt = flat[i + 5] === '' ? undefined : Number(flat[i + 5]);
      rows.push({ id: flat[i], definition, tick: Number(flat[i + 2]), state: TICK_STATES[flat[i + 3]] ?? 'gone', lastRun, definedAt });
    }
    return [Number(nowMs), rows, Number(nowUs)];
  }

  /** When schedule `id` was last removed (server µs), if a removal is recorded. */
  async removedAt(keys: TopicKeys, id: string): Promise<number | undefined> {
    const score = await this.connection.client.zscore(repeatScriptKeys(keys)[9], id);
    if (score === null) return undefined;
    const value = Number(score);
    return value < 1e14 ? value * 1000 : value; // a record of an older version holds ms
  }

  /**
   * Runs the upsert script until its first tick is ahead of the server's clock. A restore (`seenAt`:
   * when the restoring instance last knew its definition current) only creates: `info` is undefined
   * when the schedule was removed, `kept` when another definition is stored (see
   * upsert-repeat.lua.ts); `created` when this call stored it.
   */
  async store(keys: TopicKeys, topic: string, definition: RepeatDefinition, restore: { seenAt: number } | undefined, fence?: WriteFence): Promise<StoreOutcome> {
    let [nowMs, rows, nowUs] = await this.read(keys, definition.id);
    for (let attempt = 0; ; attempt++) {
      const current = rows[0];
      // A fenced upsert always goes through the script, which records the row as applied.
      if (current && current.definition.fingerprint === definition.fingerprint && !fence) {
        // A repeat() finding its definition stored: that definition is current from now on.
        if (!restore) await this.confirmDefinition(keys, definition.id, nowUs);
        const definedAt = restore ? current.definedAt : Math.max(nowUs, current.definedAt ?? 0);
        return { info: this.info(topic, current.definition, current.tick, current.lastRun), unchanged: current, nowMs, definedAt };
      }
      // Another definition stored: a restore keeps it unless it is known current only from before.
      if (current && restore && (current.definedAt ?? Infinity) >= restore.seenAt) return { kept: true, nowMs };
      const firstTick = definition.calendar.after(nowMs);
      if (firstTick === null) throw new InvalidOptionsError('repeat.schedule', 'the schedule has no future tick');
      const [status, tick, serverNow, definedAt] = await upsertRepeatScript.run<[number, number, number, number]>(
        this.connection.client,
        repeatScriptKeys(keys, fence?.recordId),
        [definition.id, storedForm(definition), firstTick, definition.tail, restore ? '1' : '0', fence ? fence.deadline : '', ...(restore ? [restore.seenAt] : [])],
      );
      nowMs = Number(serverNow);
      if (status === -3) throw new WriteFenceExpiredError();
      if (status === 4) return { info: this.info(topic, definition, Number(tick), current?.lastRun), nowMs, definedAt: Number(definedAt) || undefined };
      if (status === -2) return { nowMs };
      if (status === 3) return { kept: true, nowMs };
      if (status !== -1) return { info: this.info(topic, definition, Number(tick), current?.lastRun), created: status !== 0, nowMs, definedAt: Number(definedAt) };
      if (attempt >= 5) throw new Error(`repeat(${JSON.stringify(topic)}): the server clock kept passing the first tick`);
      [, rows] = await this.read(keys, definition.id);
    }
  }

  /**
   * Raises the time from which a stored definition is known current to `at` (server µs), never lowers
   * it, and only while the schedule has one (a removal meanwhile deleted it: nothing is added).
   */
  async confirmDefinition(keys: TopicKeys, id: string, at: number): Promise<void> {
    await this.connection.client.zadd(repeatScriptKeys(keys)[10], 'XX', 'GT', at, id);
  }

  /**
   * Deletes a schedule and its waiting tick job, recording the removal; answers whether it existed and
   * when Redis removed it (server µs; undefined when a replay of an older version's call does not tell). With a `fence` its record is the call's record, kept after the
   * call, and a removal past its deadline changes nothing (`WriteFenceExpiredError`).
   */
  async remove(keys: TopicKeys, id: string, fence?: WriteFence): Promise<{ existed: boolean; removedAt?: number }> {
    const scriptKeys = repeatScriptKeys(keys, fence?.recordId ?? newOperationId());
    const [existed, removedAt] = await removeRepeatScript.run<[number, number]>(this.connection.client, scriptKeys, fence ? [id, fence.deadline] : [id]);
    if (existed === -3) throw new WriteFenceExpiredError();
    if (!fence) await this.connection.client.del(scriptKeys[5]).catch(() => undefined);
    return { existed: existed === 1, removedAt: Number(removedAt) >= 0 ? Number(removedAt) : undefined };
  }

  /** Moves a schedule's queued tick from `row.tick` to `next` (a compare-and-set; see advance-repeat.lua.ts). */
  async advance(keys: TopicKeys, row: ScheduleRow, next: number, dropStale: boolean, claimed = false): Promise<void> {
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

  info(topic: string, definition: RepeatDefinition, tick: number, lastRun?: number): RepeatInfo {
    const info = { topic, id: definition.id, schedule: definition.schedule, catchUp: definition.catchUp, nextRunAt: new Date(tick) };
    return lastRun === undefined ? info : { ...info, lastRunAt: new Date(lastRun) };
  }
}
