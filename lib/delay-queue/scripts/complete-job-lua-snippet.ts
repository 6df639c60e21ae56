import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Ids one call trims from the completed set per bound beyond those it added itself: what is over a
 * bound without this call's doing (instances keeping more, jobs aged out while nothing ran) goes in
 * steps of this many, so no call's work grows with that backlog.
 */
const TRIM_STEP = 100;

/**
 * Lua: the acknowledgement of jobs whose handler succeeded (`acknowledge`), shared by ack-jobs and
 * the claim's first step. completeJob's caller has checked the claim (in ACTIVE under the
 * acknowledged claim token).
 *
 * Without kept completed jobs (`keep` nil) the job is deleted: one ZREM ACTIVE and one HDEL JOBS for
 * the whole batch, whatever its size. With `keep` = { completed = zset key, results = hash key,
 * count = most kept per shard (0: no bound), age = ms kept (0: no bound) }:
 *
 *   completed zset  id -> finishedAt ms (Redis clock: when the acknowledgement reached Redis)
 *   jobs hash       the body stays as it was (payload, attempts, progress): a kept id is a job that
 *                   exists, so a schedule() with its id keeps it (de-duplication) like any other
 *   results hash    id -> the handler's return value as JSON; no field when it returned nothing or
 *                   a value that is not JSON data
 *
 * A second acknowledgement of the same claim finds it out of ACTIVE and is never passed here, so a
 * replayed ack keeps one record. Kept jobs are trimmed oldest first, per bound per call at most as
 * many as the call acknowledged plus TRIM_STEP: a set within a consumer's `count` before its call is
 * within it after, whatever the batch, and a backlog over a bound (aged out, or kept by an instance
 * with a larger count) shrinks by TRIM_STEP per call. An id of the completed set whose job was
 * scheduled again meanwhile (replace, or cancel then schedule) is in DUE, ACTIVE, DEAD or its group's
 * queue: trimming its old record keeps that new body. A job of a group frees its group's turn here (groupJobFinished).
 */
export const LUA_COMPLETE_JOB: LuaSnippet = {
  name: 'completeJob',
  requires: [LUA_TOPIC_PRELUDE],
  source: `
local completedIds = {}

-- Acknowledges one job (recorded with the rest of the batch by finishCompletions).
local function completeJob(id, body, resultJson, keep)
  completedIds[#completedIds + 1] = id
  groupJobFinished(body)
  announceOutcome(id, 'c', resultJson)
  if keep then
    redis.call('zadd', keep.completed, nowMs, id)
    if resultJson ~= nil and resultJson ~= '' then
      redis.call('hset', keep.results, id, resultJson)
    else
      redis.call('hdel', keep.results, id)
    end
  end
end

local function dropCompleted(keep, ids)
  for _, id in ipairs(ids) do
    if not (redis.call('zscore', DUE, id) or redis.call('zscore', ACTIVE, id) or redis.call('zscore', DEAD, id)) then
      local body = redis.call('hget', JOBS, id)
      -- A job of a group scheduled again under this id waits in its group's queue: keep its body.
      if body and not groupQueueScore(id, body) then redis.call('hdel', JOBS, id); dropLogs(id) end
    end
  end
  redis.call('hdel', keep.results, unpack(ids))
  redis.call('zrem', keep.completed, unpack(ids))
end

-- Trims up to 'added' (the ids this call recorded) + TRIM_STEP per bound, oldest first: a set within
-- its count before the call is within it after, whatever the batch. Returns true when either bound
-- still has ids over it (a backlog the next call goes on with).
local function trimCompleted(keep, added)
  local most, left = added + ${TRIM_STEP}, false
  if keep.age > 0 then
    local old = redis.call('zrangebyscore', keep.completed, '-inf', '(' .. fmt(nowMs - keep.age), 'limit', 0, most)
    if #old > 0 then dropCompleted(keep, old) end
    left = #old == most
  end
  if keep.count > 0 then
    local excess = redis.call('zcard', keep.completed) - keep.count
    if excess > 0 then dropCompleted(keep, redis.call('zrange', keep.completed, 0, math.min(excess, most) - 1)) end
    left = left or excess > most
  end
  return left
end

-- Writes the batch completeJob gathered and trims the kept set; returns how many jobs it
-- acknowledged, and whether kept jobs over a bound are left for the next call.
local function finishCompletions(keep)
  local count, left = #completedIds, false
  if count > 0 then
    redis.call('zrem', ACTIVE, unpack(completedIds))
    if not keep then
      redis.call('hdel', JOBS, unpack(completedIds))
      local logs = {}
      for k, id in ipairs(completedIds) do logs[k] = logsKey(id) end
      redis.call('del', unpack(logs))
    end
    completedIds = {}
  end
  if keep then left = trimCompleted(keep, count) end
  return count, left
end

-- The keep table of a consumer that keeps completed jobs (nil for one that does not): keys and bounds.
local function keepOf(keeps, completedKey, resultsKey, count, age)
  if not keeps then return nil end
  return { completed = completedKey, results = resultsKey, count = count, age = age }
end

-- The acknowledgements at ARGV[from], ARGV[from + stride], ... (records id, claim token, result JSON,
-- '' for none), shared by ack-jobs and the claim: each job still claimed under its token is
-- completed; for one that is not (cancelled or replaced while it ran: its handler has returned), a
-- group turn its delivery held is released. Returns how many were acknowledged, and whether kept
-- completed jobs over a bound are left for the next call.
local function acknowledge(from, stride, keep)
  local ids, bodies = ownedBodies(from, stride)
  for k, id in ipairs(ids) do
    local at = from + stride * (k - 1)
    if bodies[k] then
      completeJob(id, bodies[k], keep and ARGV[at + 2], keep)
    else
      releaseHeldTurn(ARGV[at + 1])
    end
  end
  return finishCompletions(keep)
end
`,
};
