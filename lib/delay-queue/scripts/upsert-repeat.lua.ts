import { JobScript } from './job-script.js';
import { LUA_REPEAT, REPEAT_KEYS } from './repeat-lua-snippets.js';
import { LUA_WRITE_DEADLINE } from './write-deadline-lua-snippet.js';

/** An upsert's status, by the Lua's code (see below). */
const UPSERT_STATUSES = {
  0: 'unchanged',
  1: 'created',
  2: 'replaced',
  3: 'kept',
  4: 'already-applied',
  [-1]: 'tick-passed',
  [-2]: 'removed',
  [-3]: 'fence-expired',
  [-4]: 'runs-lost',
  [-5]: 'no-tick',
} as const;

/** What an upsert did (see upsert-repeat.lua.ts), with the schedule's tick and counts after it. */
export interface UpsertOutcome {
  readonly status: (typeof UPSERT_STATUSES)[keyof typeof UPSERT_STATUSES];
  /** The tick queued (0 when none is stored by this definition). */
  readonly tick: number;
  /** The server's now, in ms. */
  readonly nowMs: number;
  /** The definition time stored after the call (server µs; 0 when nothing is stored by this definition). */
  readonly definedAt: number;
  readonly runs: number;
  readonly queued: number;
}

/**
 * Creates or updates a repeatable schedule (`repeat()`): an upsert by schedule id.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, an outbox row's record when a
 * deadline is given (else unused; topic-base-lua-snippet.ts reads it as KEYS[6]) and the repeat keys
 * (see repeat-lua-snippets.ts); the schedule id, the stored form (fingerprint + JSON), the first tick
 * (epoch ms, after the server time the caller read, within the bounds; '' when no tick is left within
 * them), the tick jobs' body tail, `restore` (an instance stores again a schedule it upserted that it
 * found missing), which only creates: it stores nothing over another definition or after a recorded
 * removal; `deadline` (an outbox row's application, see jobs/write-fence.ts; '' for none) the write's
 * deadline on this server's clock; `seenAt` (a restore; '' for none) the server µs from which the
 * restoring instance knew its definition current; the definition's limit, startDate, endDate ('': none).
 *
 * Returns { status, tick, nowMs, definedAt, runs, queued }, decoded into an UpsertOutcome: status 0
 * the same definition was stored already (nothing changes; tick is the one queued), 1 created,
 * 2 replaced another definition (its waiting tick job is dropped; one already running finishes),
 * -1 the first tick is no longer in the future (read the time again); a restore only: 3 another
 * definition known current at or after `seenAt` is stored (kept; one known only from before is
 * replaced, status 2), -2 the schedule was removed at or after `seenAt` (nothing stored; any removal
 * without `seenAt`), -4 a definition with a limit whose schedule is not stored (its runs were lost
 * with the data: not restored, nothing stored); -5 no tick within the bounds and no schedule stored
 * (nothing stored). A store clears the schedule's removal record and sets its definition time
 * (repeatDefined): now, or `seenAt` for a restore; finding the same definition raises it to that
 * time. definedAt: the definition time stored after the call (0 when nothing is stored by this
 * definition). A changed definition starts at a tick after the server's now, so no tick that may have
 * run is enqueued again. It keeps the runs count (repeatRuns), less a waiting tick it drops
 * undelivered; when the bounds leave it no tick (limit used up, endDate passed) it is stored
 * finished: no tick queued, tick the last one (status 2). runs: the schedule's runs so far; queued:
 * its ticks queued (the count the limit bounds). Run twice, the second run finds the same definition
 * and changes nothing (a restore run again after a
 * removal finds the removal). With a deadline: 4 the row was applied already (its record exists;
 * nothing changes; definedAt is the stored one), -3 the deadline has passed (nothing changes);
 * otherwise the row's record is set with the change (also when the same definition was stored already).
 */
export const upsertRepeatScript = new JobScript(
  'upsertRepeat',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record', ...REPEAT_KEYS],
    args: {
      scheduleId: 'text',
      stored: 'text',
      firstTick: 'text',
      tail: 'text',
      restore: 'flag',
      deadline: 'text',
      seenAt: 'text',
      limit: 'text',
      startDate: 'text',
      endDate: 'text',
    },
    decode: decodeUpsertOutcome,
  },
  `
local id, stored, firstTick, tail, restore = ARG.scheduleId, ARG.stored, tonumber(ARG.firstTick), ARG.tail, ARG.restore
local fenced = ARG.deadline ~= ''
local seenAt = tonumber(ARG.seenAt)
local limit, startDate, endDate = ARG.limit, ARG.startDate, ARG.endDate
local definedAt = nowUs
if restore then definedAt = seenAt or nowUs end
local function reply(status, tick, at)
  if not tick then return { status, 0, nowMs, at, 0, 0 } end
  return { status, tonumber(tick), nowMs, at, runsOf(id, tick), queuedOf(id) }
end
if fenced then
  if redis.call('exists', OPERATION) == 1 then
    return reply(4, redis.call('zscore', REPEAT_NEXT, id), tonumber(redis.call('zscore', REPEAT_DEFINED, id) or 0))
  end
  if pastDeadline(ARG.deadline) then return reply(-3, nil, 0) end
end
local old = redis.call('hget', REPEATS, id)
local oldTick = redis.call('zscore', REPEAT_NEXT, id)
if old and oldTick and string.sub(old, 1, 40) == string.sub(stored, 1, 40) then
  local stored = tonumber(redis.call('zscore', REPEAT_DEFINED, id) or '0')
  if definedAt > stored then
    redis.call('zadd', REPEAT_DEFINED, fmt(definedAt), id)
    stored = definedAt
  end
  if fenced then recordReply('1') end
  return reply(0, oldTick, stored)
end
if restore then
  -- Another definition stored: kept, unless it is known current only from before this one was.
  local otherDefinedAt = tonumber(redis.call('zscore', REPEAT_DEFINED, id) or '0')
  if old and oldTick and (seenAt == nil or otherDefinedAt >= seenAt) then return reply(3, oldTick, 0) end
  local removedAt = redis.call('zscore', REPEAT_REMOVED, id)
  if removedAt and (seenAt == nil or asUs(removedAt) >= seenAt) then return reply(-2, nil, 0) end
  if limit ~= '' and not oldTick then return reply(-4, nil, 0) end
end
if firstTick and firstTick <= nowMs then return reply(-1, nil, 0) end
-- The count goes on across definitions; a waiting tick dropped before any delivery gives its run back.
local queued = 0
local oldJob = oldTick and tickJobId(id, tonumber(oldTick))
if oldTick then
  queued = queuedOf(id)
  if waitsUndelivered(oldJob) then queued = math.max(queued - 1, 0) end
end
local ticks = firstTick and withinBounds(firstTick, queued, limit, startDate, endDate)
if not ticks and not oldTick then return reply(-5, nil, 0) end
redis.call('zrem', REPEAT_REMOVED, id)
if oldTick then dropWaitingTick(oldJob) end
redis.call('hset', REPEATS, id, stored)
redis.call('zadd', REPEAT_DEFINED, fmt(definedAt), id)
local tick = oldTick
if ticks then
  tick = firstTick
  queued = queued + 1
  redis.call('zadd', REPEAT_NEXT, fmt(firstTick), id)
  enqueueTick(tickJobId(id, firstTick), firstTick, tail)
end
redis.call('hset', REPEAT_RUNS, id, queued)
if fenced then recordReply('1') end
return reply(old and 2 or 1, tick, definedAt)
`,
  [LUA_REPEAT, LUA_WRITE_DEADLINE],
);

function decodeUpsertOutcome(reply: unknown): UpsertOutcome {
  const [status, tick, nowMs, definedAt, runs, queued] = (reply as number[]).map(Number);
  return { status: UPSERT_STATUSES[status as keyof typeof UPSERT_STATUSES], tick, nowMs, definedAt, runs, queued };
}
