import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_REPEAT } from './repeat-lua-snippets.js';
import { LUA_WRITE_DEADLINE } from './write-deadline-lua-snippet.js';

/**
 * Creates or updates a repeatable schedule (`repeat()`): an upsert by schedule id.
 *
 * KEYS  see repeat-lua-snippets.ts; KEYS[6] an outbox row's record when ARGV[6] is given (else unused)
 * ARGV[1] schedule id, ARGV[2] stored form (fingerprint + JSON), ARGV[3] first tick (epoch ms, after
 *         the server time the caller read), ARGV[4] the tick jobs' body tail, ARGV[5] '1': a restore
 *         (an instance stores again a schedule it upserted that it found missing), which only creates:
 *         it stores nothing over another definition or after a recorded removal;
 *         ARGV[6] (optional, an outbox row's application, see jobs/write-fence.ts) the write's
 *         deadline on this server's clock; ARGV[7] (a restore) the server µs from which the
 *         restoring instance knew its definition current
 *
 * Returns { status, tick, nowMs, definedAt }: status 0 the same definition was stored already (nothing changes;
 * tick is the one queued), 1 created, 2 replaced another definition (its waiting tick job is dropped;
 * one already running finishes), -1 the first tick is no longer in the future (read the time again);
 * a restore only: 3 another definition known current at or after ARGV[7] is stored (kept; one known
 * only from before is replaced, status 2), -2 the schedule was removed at or after
 * ARGV[7] (nothing stored; any removal without ARGV[7]). A store clears the schedule's removal
 * record and sets its definition time (KEYS[11]): now, or ARGV[7] for a restore; finding the same
 * definition raises it to that time. definedAt: the definition time stored after the call (0 when
 * nothing is stored by this definition). A changed definition
 * starts at a tick after the server's now, so no tick that may have run is enqueued again. Run
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
local definedAt = nowUs
if restore then definedAt = seenAt or nowUs end
if fenced then
  if redis.call('exists', OPERATION) == 1 then
    return { 4, tonumber(redis.call('zscore', REPEAT_NEXT, id) or 0), nowMs, tonumber(redis.call('zscore', REPEAT_DEFINED, id) or 0) }
  end
  if pastDeadline(ARGV[6]) then return { -3, 0, nowMs, 0 } end
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
  return { 0, tonumber(oldTick), nowMs, stored }
end
if restore then
  -- Another definition stored: kept, unless it is known current only from before this one was.
  local otherDefinedAt = tonumber(redis.call('zscore', REPEAT_DEFINED, id) or '0')
  if old and oldTick and (seenAt == nil or otherDefinedAt >= seenAt) then return { 3, tonumber(oldTick), nowMs, 0 } end
  local removedAt = redis.call('zscore', REPEAT_REMOVED, id)
  if removedAt and (seenAt == nil or asUs(removedAt) >= seenAt) then return { -2, 0, nowMs, 0 } end
end
if firstTick <= nowMs then return { -1, 0, nowMs, 0 } end
redis.call('zrem', REPEAT_REMOVED, id)
if oldTick then dropWaitingTick(tickJobId(id, tonumber(oldTick))) end
redis.call('hset', REPEATS, id, stored)
redis.call('zadd', REPEAT_NEXT, fmt(firstTick), id)
redis.call('zadd', REPEAT_DEFINED, fmt(definedAt), id)
enqueueTick(tickJobId(id, firstTick), firstTick, tail)
if fenced then recordReply('1') end
return { old and 2 or 1, firstTick, nowMs, definedAt }
`,
  [LUA_REPEAT, LUA_WRITE_DEADLINE],
);
