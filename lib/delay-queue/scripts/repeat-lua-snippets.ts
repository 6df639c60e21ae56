import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_STORE_JOB } from './store-job-lua-snippet.js';

/**
 * How long a removal is remembered beside the shard's schedules, in ms of server time: an instance
 * that upserted a schedule and finds it missing within that time tells a removal (remembered) from
 * a loss of the data (the record is lost with the rest). Every instance checks every 5 s.
 */
const REMOVED_SCHEDULE_KEPT_MS = 24 * 3_600_000;

/**
 * Lua: what the repeatable-schedule scripts share (a constant of this library; no user input). They
 * take the five topic keys of the schedule's shard, then:
 *
 * KEYS[6] the call's operation record (see lua-snippets.ts; only removeRepeat writes one, the others
 *         pass the key unused)
 * KEYS[7] schedules  hash  schedule id -> <40-hex fingerprint><definition JSON> (see repeat-definition.ts)
 * KEYS[8] next ticks zset  schedule id -> the tick whose job was enqueued last (epoch ms)
 * KEYS[9] last runs  zset  schedule id -> the last tick a consumer claimed (epoch ms; for dashboards)
 * KEYS[10] removals zset  schedule id -> when removeRepeat() removed it (server ms; kept
 *         REMOVED_SCHEDULE_KEPT_MS, cleared by the next repeat() of the id)
 *
 * Invariant: a schedule's stored tick only grows while its definition stays the same, and a tick's
 * job is enqueued only by the step that moves the stored tick onto it. So each tick is enqueued once,
 * however many instances, re-sent commands or restarts try.
 */
export const LUA_REPEAT = {
  name: 'repeat',
  requires: [LUA_STORE_JOB],
  source: `
local REPEATS, REPEAT_NEXT, REPEAT_LAST, REPEAT_REMOVED = KEYS[7], KEYS[8], KEYS[9], KEYS[10]

-- Remembers that the schedule was removed (and forgets removals older than the retention).
local function recordRemoval(id)
  redis.call('zremrangebyscore', REPEAT_REMOVED, '-inf', '(' .. fmt(nowMs - ${REMOVED_SCHEDULE_KEPT_MS}))
  redis.call('zadd', REPEAT_REMOVED, fmt(nowMs), id)
end

-- The same id as tickJobId() in jobs/tick-job-id.ts.
local function tickJobId(scheduleId, tick)
  return 'repeat:' .. scheduleId .. '@' .. fmt(tick)
end

-- Removes a tick's job if it still waits; a job already claimed (or dead) is left to its fate.
local function dropWaitingTick(jobId)
  if redis.call('zscore', DUE, jobId) then
    redis.call('zrem', DUE, jobId)
    redis.call('hdel', JOBS, jobId)
  end
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
