import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_STORE_JOB } from './store-job-lua-snippet.js';

/**
 * How long a removal is remembered beside the shard's schedules, in ms of server time: an instance
 * that upserted a schedule and finds it missing within that time tells a removal (remembered) from
 * a loss of the data (the record is lost with the rest). Every instance checks every 5 s.
 */
const REMOVED_SCHEDULE_KEPT_MS = 24 * 3_600_000;

/**
 * The keys every script using LUA_REPEAT names in its contract (the snippet reads them as `KEY.<name>`),
 * after the five topic keys (and, for the scripts that record their call, its operation record). All
 * are one shard's (`RedisKeySpace.topic`), named after the shard's jobs key:
 *
 * repeats        hash  schedule id -> <40-hex fingerprint><definition JSON> (see repeat-definition.ts)
 * repeatNext     zset  schedule id -> the tick whose job was enqueued last (epoch ms)
 * repeatLast     zset  schedule id -> the last tick a consumer claimed (epoch ms; for dashboards)
 * repeatRemoved  zset  schedule id -> when removeRepeat() removed it (server µs; a record an older
 *                version wrote holds ms, read as µs by asUs; kept REMOVED_SCHEDULE_KEPT_MS, cleared by
 *                the next repeat() of the id)
 * repeatDefined  zset  schedule id -> the server µs from which its stored definition is known to be
 *                current: when repeat() (or an outbox row's application) stored it, or, for a restore,
 *                when the restoring instance last knew it current. A removal at or after that time
 *                (re-recorded by the instance that made it after Redis lost its data) undoes the
 *                restore. Microseconds: a removal and a repeat() in the same millisecond stay ordered.
 * repeatRuns     hash  schedule id -> its ticks queued so far (kept when repeat() changes the
 *                definition, less a waiting tick it drops undelivered; deleted with the schedule)
 */
export const REPEAT_KEYS = ['repeats', 'repeatNext', 'repeatLast', 'repeatRemoved', 'repeatDefined', 'repeatRuns'] as const;

/**
 * Lua: what the repeatable-schedule scripts share (a constant of this library; no user input), over
 * the keys of REPEAT_KEYS.
 *
 * Invariant: a schedule's stored tick only grows while its definition stays the same, and a tick's
 * job is enqueued only by the step that moves the stored tick onto it. So each tick is enqueued once,
 * however many instances, re-sent commands or restarts try. The runs count grows in that same step,
 * and a bounded schedule's step queues nothing once it reaches the limit or the server clock passed
 * the endDate (withinBounds): at most `limit` ticks are queued, in all.
 */
export const LUA_REPEAT = {
  name: 'repeat',
  requires: [LUA_STORE_JOB],
  source: `
local REPEATS, REPEAT_NEXT, REPEAT_LAST, REPEAT_REMOVED, REPEAT_DEFINED, REPEAT_RUNS =
  KEY.repeats, KEY.repeatNext, KEY.repeatLast, KEY.repeatRemoved, KEY.repeatDefined, KEY.repeatRuns

-- A removal record's time in µs (an older version recorded ms: no µs time is that small).
local function asUs(score)
  score = tonumber(score)
  if score < 1e14 then return score * 1000 end
  return score
end

-- Remembers that the schedule was removed at removedAt (µs; a later record is kept), and forgets
-- removals older than the retention.
local function recordRemoval(id, removedAt)
  redis.call('zremrangebyscore', REPEAT_REMOVED, '-inf', '(' .. fmt(nowUs - ${REMOVED_SCHEDULE_KEPT_MS} * 1000))
  local recorded = redis.call('zscore', REPEAT_REMOVED, id)
  if not recorded or asUs(recorded) < removedAt then redis.call('zadd', REPEAT_REMOVED, fmt(removedAt), id) end
end

-- The same id as tickJobId() in jobs/tick-job-id.ts.
local function tickJobId(scheduleId, tick)
  return 'repeat:' .. scheduleId .. '@' .. fmt(tick)
end

-- Whether a tick's job waits and was never delivered (a claim counts an attempt in its body).
local function waitsUndelivered(jobId)
  if not redis.call('zscore', DUE, jobId) then return false end
  local body = redis.call('hget', JOBS, jobId)
  return body ~= false and attemptsOf(body) == 0
end

-- The ticks a schedule has queued so far (0 for one stored before they were counted).
local function queuedOf(id)
  return tonumber(redis.call('hget', REPEAT_RUNS, id) or '0')
end

-- Its runs so far: the ticks queued, less the queued tick while it waits undelivered.
local function runsOf(id, tick)
  local runs = queuedOf(id)
  if tick and waitsUndelivered(tickJobId(id, tonumber(tick))) then runs = runs - 1 end
  return math.max(runs, 0)
end

-- Whether a bounded schedule may queue a tick after queued ticks so far: below the limit, not
-- before startDate, not after endDate, and the server clock not past endDate. Bounds are the
-- callers' arguments, numbers or '' (none), read from the definition whose fingerprint they checked.
local function withinBounds(tick, queued, limit, startDate, endDate)
  limit, startDate, endDate = tonumber(limit), tonumber(startDate), tonumber(endDate)
  if limit and queued >= limit then return false end
  if startDate and tick < startDate then return false end
  if endDate and (nowMs > endDate or tick > endDate) then return false end
  return true
end

-- Removes a tick's job if it still waits; a job already claimed (or dead) is left to its fate.
local function dropWaitingTick(jobId)
  if unqueueDue(jobId) == 1 then
    redis.call('hdel', JOBS, jobId)
    dropLogs(jobId)
    announceOutcome(jobId, 'x') -- a waitFor of the tick hears it will not run
  end
end

-- Deletes a schedule and its tick job if it still waits (one already claimed finishes, and its
-- advance finds no schedule). Returns 1 if the schedule was stored, else 0.
local function deleteSchedule(id)
  local tick = redis.call('zscore', REPEAT_NEXT, id)
  local existed = redis.call('hdel', REPEATS, id)
  redis.call('zrem', REPEAT_NEXT, id)
  redis.call('zrem', REPEAT_LAST, id)
  redis.call('zrem', REPEAT_DEFINED, id)
  redis.call('hdel', REPEAT_RUNS, id)
  if tick then dropWaitingTick(tickJobId(id, tonumber(tick))) end
  return existed
end

-- Stores a tick's job due at its tick (now if the tick is past), as schedule() stores a job.
local function enqueueTick(jobId, tick, tail)
  if redis.call('hexists', JOBS, jobId) == 1 then return end
  local headBefore = headScore()
  local score = storeJob(jobId, tick, tail)
  if headBefore == nil or score < headBefore then wake(math.floor(score / SLOTS)) end
end
`,
} satisfies LuaSnippet;
