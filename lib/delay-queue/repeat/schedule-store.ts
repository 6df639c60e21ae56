import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { RedisConnection } from '../../core/connection/redis-connection.js';
import type { RepeatInfo } from '../interfaces/repeat-options.interface.js';
import { newOperationId, operationKey } from '../jobs/operation-record.js';
import { WriteFenceExpiredError } from '../../core/errors/write-fence-expired.error.js';
import type { WriteFence } from '../jobs/write-fence.js';
import { advanceRepeatScript } from '../scripts/advance-repeat.lua.js';
import { readRepeatsScript, type QueuedTickState } from '../scripts/read-repeats.lua.js';
import { removeRepeatScript } from '../scripts/remove-repeat.lua.js';
import { upsertRepeatScript } from '../scripts/upsert-repeat.lua.js';
import { boundsArgs, firstTickWithin, isFinished } from './repeat-bounds.js';
import { readStoredForm, storedForm, type RepeatDefinition } from './repeat-definition.js';

/** Schedules read per shard by one call without an id. */
const READ_BATCH = 1000;

/** The record an upsert without an outbox row names in its fixed slot: never read nor written. */
const NO_RECORD = 'unused';

/** A schedule's history as Redis counts it (see repeat-lua-snippets.ts). */
export interface ScheduleProgress {
  /** The last tick a consumer claimed, if any. */
  readonly lastRun?: number;
  /** Its runs so far (RepeatInfo.runs). */
  readonly runs: number;
  /** Its ticks queued so far, the count its limit bounds. */
  readonly queued: number;
}

/** One schedule as read from a shard. */
export interface ScheduleRow extends ScheduleProgress {
  readonly id: string;
  readonly definition: RepeatDefinition;
  readonly tick: number;
  /** Where the queued tick's job is: waiting, active, dead, or gone (ran or was removed). */
  readonly state: QueuedTickState;
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
  /** A restore of a definition with a limit found nothing stored: its runs were lost, so it is not restored. */
  readonly runsLost?: true;
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
    const read = await readRepeatsScript.call(this.connection, keys, { scheduleId: id, limit: READ_BATCH });
    const rows: ScheduleRow[] = [];
    for (const { stored, ...row } of read.schedules) {
      const definition = readStoredForm(row.id, stored);
      if (definition) rows.push({ ...row, definition });
    }
    return [read.nowMs, rows, read.nowUs];
  }

  /** When schedule `id` was last removed (server µs), if a removal is recorded. */
  async removedAt(keys: TopicKeys, id: string): Promise<number | undefined> {
    const score = await this.connection.command<string | null>('zscore', keys.repeatRemoved, id);
    if (score === null) return undefined;
    const value = Number(score);
    return value < 1e14 ? value * 1000 : value; // a record of an older version holds ms
  }

  /**
   * Runs the upsert script until its first tick is ahead of the server's clock. A restore (`seenAt`:
   * when the restoring instance last knew its definition current) only creates: `info` is undefined
   * when the schedule was removed, `kept` when another definition is stored (see
   * upsert-repeat.lua.ts); `created` when this call stored it. A definition whose bounds leave no
   * tick is stored finished over a stored schedule (its runs count kept), refused for a new one
   * (`InvalidOptionsError`; a restore stores nothing).
   */
  async store(
    keys: TopicKeys,
    topic: string,
    definition: RepeatDefinition,
    restore: { seenAt: number } | undefined,
    fence?: WriteFence,
  ): Promise<StoreOutcome> {
    let [nowMs, rows, nowUs] = await this.read(keys, definition.id);
    for (let attempt = 0; ; attempt++) {
      const current = rows[0];
      // A fenced upsert always goes through the script, which records the row as applied.
      if (current && current.definition.fingerprint === definition.fingerprint && !fence) {
        // A repeat() finding its definition stored: that definition is current from now on.
        if (!restore) await this.confirmDefinition(keys, definition.id, nowUs);
        const definedAt = restore ? current.definedAt : Math.max(nowUs, current.definedAt ?? 0);
        return { info: this.info(topic, current.definition, current.tick, current, nowMs), unchanged: current, nowMs, definedAt };
      }
      // Another definition stored: a restore keeps it unless it is known current only from before.
      if (current && restore && (current.definedAt ?? Infinity) >= restore.seenAt) return { kept: true, nowMs };
      const firstTick = firstTickWithin(definition.calendar, definition.bounds, nowMs);
      if (firstTick === null && !current) {
        if (restore) return { nowMs };
        throw noTickLeft(definition, nowMs);
      }
      const record = operationKey(keys.jobs, fence?.recordId ?? NO_RECORD);
      const {
        status,
        tick,
        nowMs: serverNow,
        definedAt,
        runs,
        queued,
      } = await upsertRepeatScript.call(
        this.connection,
        { ...keys, record },
        {
          scheduleId: definition.id,
          stored: storedForm(definition),
          firstTick: firstTick === null ? '' : String(firstTick),
          tail: definition.tail,
          restore: restore !== undefined,
          deadline: fence ? String(fence.deadline) : '',
          seenAt: restore ? String(restore.seenAt) : '',
          ...boundsArgs(definition.bounds),
        },
      );
      nowMs = serverNow;
      const info = () => this.info(topic, definition, tick, { lastRun: current?.lastRun, runs, queued }, nowMs);
      if (status === 'fence-expired') throw new WriteFenceExpiredError();
      if (status === 'already-applied') return { info: info(), nowMs, definedAt: definedAt || undefined };
      if (status === 'removed') return { nowMs };
      if (status === 'runs-lost') return { nowMs, runsLost: true };
      if (status === 'no-tick') {
        if (restore) return { nowMs };
        throw noTickLeft(definition, nowMs);
      }
      if (status === 'kept') return { kept: true, nowMs };
      if (status !== 'tick-passed') return { info: info(), created: status !== 'unchanged', nowMs, definedAt };
      if (attempt >= 5) throw new Error(`repeat(${JSON.stringify(topic)}): the server clock kept passing the first tick`);
      [, rows] = await this.read(keys, definition.id);
    }
  }

  /**
   * Raises the time from which a stored definition is known current to `at` (server µs), never lowers
   * it, and only while the schedule has one (a removal meanwhile deleted it: nothing is added).
   */
  async confirmDefinition(keys: TopicKeys, id: string, at: number): Promise<void> {
    await this.connection.command('zadd', keys.repeatDefined, 'XX', 'GT', at, id);
  }

  /**
   * Deletes a schedule and its waiting tick job, recording the removal; answers whether it existed and
   * when Redis removed it (server µs; undefined when a replay of an older version's call does not tell). With a `fence` its record is the
   * call's record, kept after the
   * call, and a removal past its deadline changes nothing (`WriteFenceExpiredError`).
   */
  async remove(keys: TopicKeys, id: string, fence?: WriteFence): Promise<{ existed: boolean; removedAt?: number }> {
    const record = operationKey(keys.jobs, fence?.recordId ?? newOperationId());
    const { status, removedAt } = await removeRepeatScript.call(
      this.connection,
      { ...keys, record },
      {
        scheduleId: id,
        deadline: fence ? String(fence.deadline) : '',
      },
    );
    if (status === 'fence-expired') throw new WriteFenceExpiredError();
    if (!fence) await this.connection.command('del', record).catch(() => undefined);
    return { existed: status === 'removed', removedAt };
  }

  /**
   * Moves a schedule's queued tick from `row.tick` to `next` (a compare-and-set; see
   * advance-repeat.lua.ts). `next` null (no tick within the bounds): only a claim is recorded.
   */
  async advance(keys: TopicKeys, row: ScheduleRow, next: number | null, dropStale: boolean, claimed = false): Promise<void> {
    if (next === null && !claimed) return;
    const { definition } = row;
    await advanceRepeatScript.call(this.connection, keys, {
      scheduleId: row.id,
      fingerprint: definition.fingerprint,
      expectedTick: row.tick,
      nextTick: next === null ? '' : String(next),
      tail: definition.tail,
      dropStale,
      claimed,
      ...boundsArgs(definition.bounds),
    });
  }

  /** A schedule as `repeat()` and `listRepeats()` answer it, at server time `nowMs`. */
  info(topic: string, definition: RepeatDefinition, tick: number, progress: ScheduleProgress, nowMs: number): RepeatInfo {
    const { limit, startDate, endDate } = definition.bounds;
    return {
      topic,
      id: definition.id,
      schedule: definition.schedule,
      catchUp: definition.catchUp,
      nextRunAt: new Date(tick),
      ...(progress.lastRun === undefined ? {} : { lastRunAt: new Date(progress.lastRun) }),
      runs: progress.runs,
      ...(limit === undefined ? {} : { limit }),
      ...(startDate === undefined ? {} : { startDate: new Date(startDate) }),
      ...(endDate === undefined ? {} : { endDate: new Date(endDate) }),
      ...(isFinished(() => definition.calendar, definition.bounds, tick, nowMs, progress.queued) ? { finished: true as const } : {}),
    };
  }
}

/** The error of a new schedule whose bounds leave it no tick after the server's now. */
function noTickLeft(definition: RepeatDefinition, nowMs: number): InvalidOptionsError {
  const { endDate } = definition.bounds;
  if (endDate === undefined) return new InvalidOptionsError('repeat.schedule', 'the schedule has no future tick');
  return new InvalidOptionsError(
    'repeat.endDate',
    `no tick of the schedule falls between the Redis server's now (${new Date(nowMs).toISOString()}) ` +
      `and endDate ${new Date(endDate).toISOString()}; give a later endDate`,
  );
}
