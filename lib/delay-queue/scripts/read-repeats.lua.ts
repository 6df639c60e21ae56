import { JobScript } from './job-script.js';
import { LUA_REPEAT, REPEAT_KEYS } from './repeat-lua-snippets.js';

/** Where a schedule's queued tick job is: waiting, active, dead, or gone (ran or was removed). */
export type QueuedTickState = 'waiting' | 'active' | 'dead' | 'gone';

/** The queued tick's state as the Lua answers it: a one-letter code, '' for gone. */
const TICK_STATES: Readonly<Record<string, QueuedTickState>> = { w: 'waiting', a: 'active', d: 'dead' };

/** One stored schedule as read-repeats answers it (schedule-store.ts reads its definition from `stored`). */
export interface StoredScheduleRead {
  readonly id: string;
  /** The stored form: the fingerprint, then the definition's JSON (see repeat-definition.ts). */
  readonly stored: string;
  /** The tick whose job was queued last (epoch ms). */
  readonly tick: number;
  readonly state: QueuedTickState;
  /** The last tick a consumer claimed, if any. */
  readonly lastRun?: number;
  /** From when its definition is known current (server µs), if recorded. */
  readonly definedAt?: number;
  /** Its runs so far: the ticks queued, less the queued tick while it waits undelivered. */
  readonly runs: number;
  /** Its ticks queued so far, the count its limit bounds. */
  readonly queued: number;
}

/** A read of one shard's schedules: the server's now (ms and µs) and the schedules. */
export interface SchedulesRead {
  readonly nowMs: number;
  readonly nowUs: number;
  readonly schedules: StoredScheduleRead[];
}

/**
 * Reads repeatable schedules of one shard with where each one's queued tick job is. Read-only.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the repeat keys (see
 * repeat-lua-snippets.ts); a schedule id, or '' for every schedule of the shard (at most `limit` of
 * them, by next tick), and that limit.
 *
 * Returns { nowMs, { id, stored form, tick, job state ('w' waiting | 'a' active | 'd' dead | '' gone),
 *           last claimed tick or '', definition time (µs) or '', runs so far, ticks queued, ... },
 *           nowUs }, decoded into SchedulesRead.
 */
export const readRepeatsScript = new JobScript(
  'readRepeats',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', ...REPEAT_KEYS],
    args: { scheduleId: 'text', limit: 'int' },
    decode: decodeSchedulesRead,
  },
  `
local ids = { ARG.scheduleId }
if ARG.scheduleId == '' then ids = redis.call('zrange', REPEAT_NEXT, 0, ARG.limit - 1) end
local rows = {}
for _, id in ipairs(ids) do
  local stored = redis.call('hget', REPEATS, id)
  local tick = redis.call('zscore', REPEAT_NEXT, id)
  if stored and tick then
    local jobId = tickJobId(id, tonumber(tick))
    local state = ''
    if redis.call('zscore', DUE, jobId) then state = 'w'
    elseif redis.call('zscore', ACTIVE, jobId) then state = 'a'
    elseif redis.call('zscore', DEAD, jobId) then state = 'd' end
    rows[#rows + 1] = id
    rows[#rows + 1] = stored
    rows[#rows + 1] = tick
    rows[#rows + 1] = state
    rows[#rows + 1] = redis.call('zscore', REPEAT_LAST, id) or ''
    rows[#rows + 1] = redis.call('zscore', REPEAT_DEFINED, id) or ''
    rows[#rows + 1] = runsOf(id, tick)
    rows[#rows + 1] = queuedOf(id)
  end
end
return { nowMs, rows, nowUs }
`,
  [LUA_REPEAT],
);

function decodeSchedulesRead(reply: unknown): SchedulesRead {
  const [nowMs, flat, nowUs] = reply as [number, (string | number)[], number];
  const numberOrNone = (value: string | number) => (value === '' ? undefined : Number(value));
  const schedules: StoredScheduleRead[] = [];
  for (let i = 0; i < flat.length; i += 8) {
    schedules.push({
      id: String(flat[i]),
      stored: String(flat[i + 1]),
      tick: Number(flat[i + 2]),
      state: TICK_STATES[flat[i + 3]] ?? 'gone',
      lastRun: numberOrNone(flat[i + 4]),
      definedAt: numberOrNone(flat[i + 5]),
      runs: Number(flat[i + 6]),
      queued: Number(flat[i + 7]),
    });
  }
  return { nowMs: Number(nowMs), nowUs: Number(nowUs), schedules };
}
