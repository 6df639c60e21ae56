import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_REPEAT } from './repeat-lua-snippets.js';
import { LUA_WRITE_DEADLINE } from './write-deadline-lua-snippet.js';

/**
 * Creates or updates a repeatable schedule (`repeat()`): an upsert by schedule id.
 *
 * KEYS  see repeat-lua-snippets.ts; KEYS[6] an outbox row's record when ARGV[6] is given (else unused)
 * ARGV[1] schedule id, ARGV[2] stored form (fingerprint + JSON), ARGV[3] first tick (epoch ms, after
 *         the server time the caller read, within the bounds; '' when no tick is left within them),
 *         ARGV[4] the tick jobs' body tail, ARGV[5] '1': a restore
 *         (an instance stores again a schedule it upserted that it found missing), which only creates:
 *         it stores nothing over another definition or after a recorded removal;
 *         ARGV[6] (optional, an outbox row's application, see jobs/write-fence.ts) the write's
 *         deadline on this server's clock; ARGV[7] (a restore) the server µs from which the
 *         restoring instance knew its definition current; ARGV[8..10] the definition's limit,
 *         startDate, endDate ('' or absent: none)
 *
 * Returns { status, tick, nowMs, definedAt, runs, queued }: status 0 the same definition was stored already (nothing changes;
 * tick is the one queued), 1 created, 2 replaced another definition (its waiting tick job is dropped;
 * one already running finishes), -1 the first tick is no longer in the future (read the time again);
 * a restore only: 3 another definition known current at or after ARGV[7] is stored (kept; one known
 * only from before is replaced, status 2), -2 the schedule was removed at or after
 * ARGV[7] (nothing stored; any removal without ARGV[7]), -4 a definition with a limit whose
 * schedule is not stored (its runs were lost with the data: not restored, nothing stored);
 * -5 no tick within the bounds and no schedule stored (nothing stored). A store clears the schedule's removal
 * record and sets its definition time (KEYS[11]): now, or ARGV[7] for a restore; finding the same
 * definition raises it to that time. definedAt: the definition time stored after the call (0 when
 * nothing is stored by this definition). A changed definition
 * starts at a tick after the server's now, so no tick that may have run is enqueued again. It keeps
 * the runs count (KEYS[12]), less a waiting tick it drops undelivered; when the bounds leave it no
 * tick (limit used up, endDate passed) it is stored finished: no tick queued, tick the last one
 * (status 2). runs: the schedule's runs so far; queued: its ticks queued (the count the limit bounds). Run
 * twice, the second run finds the same definition and changes nothing (a restore run again after a
 * removal finds the removal). With a deadline: 4 the row was applied already (its record KEYS[6]
 * exists; nothing changes; definedAt is the stored one), -3 the deadline has passed (nothing changes); otherwise the row's record
 * is set with the change (also when the same definition was stored already).
 */
export const upsertRepeatScript = new RedisScript(
  'upsertRepeat',
  `
local id, stored, firstTick, tail, restore = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5] == '1'
local fenced = ARGV[6] ~= nil and ARGV[6] ~= ''
local seenAt = tonumber(ARGV[7] or '')
local limit, startDate, endDate = ARGV[8] or '', ARGV[9] or '', ARGV[10] or ''
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
  if pastDeadline(ARGV[6]) then return reply(-3, nil, 0) end
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
