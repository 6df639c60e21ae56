import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_GROUPS } from './group-lua-snippet.js';

/**
 * Lua: the opening every delayed-job script uses (a constant of this library; no user input): the
 * topic's keys, clock and job helpers (topic-base-lua-snippet.ts), job groups
 * (group-lua-snippet.ts), then what moves jobs to the dead letters and answers replays.
 */
export const LUA_TOPIC_PRELUDE: LuaSnippet = {
  name: 'topicPrelude',
  requires: [LUA_GROUPS],
  source: `
-- Bounded work per call: what is left is trimmed by the next call.
local function trimDeadByAge(maxAge)
  local old = redis.call('zrangebyscore', DEAD, '-inf', '(' .. fmt(nowMs - maxAge), 'limit', 0, 100)
  for _, id in ipairs(old) do redis.call('hdel', JOBS, id); dropLogs(id) end
  if #old > 0 then redis.call('zrem', DEAD, unpack(old)) end
end

local function trimDead(maxCount, maxAge)
  trimDeadByAge(maxAge)
  local excess = redis.call('zcard', DEAD) - maxCount
  if excess > 0 then
    local ids = redis.call('zrange', DEAD, 0, math.min(excess, 100) - 1)
    for _, id in ipairs(ids) do redis.call('hdel', JOBS, id); dropLogs(id) end
    redis.call('zremrangebyrank', DEAD, 0, #ids - 1)
  end
end

-- The reply a first run of this call recorded (a string), or nil: not run before, or no record asked for.
local function recordedReply()
  if OPERATION then return redis.call('get', OPERATION) end
  return nil
end

local function recordReply(reply)
  if OPERATION then redis.call('set', OPERATION, reply, 'px', OPERATION_TTL_MS) end
end

-- A job taken out by cancel or replace: the record of a kept completed job of that id (see
-- complete-job-lua-snippet.ts) goes with it. Its callers (cancel-job, and schedule-jobs and
-- write-outbox-job through makeRoomFor) declare the shard's completed zset and results hash as
-- KEY.completed and KEY.results.
local function forgetCompleted(id)
  redis.call('zrem', KEY.completed, id)
  redis.call('hdel', KEY.results, id)
end

-- The ids someone waits for (DelayQueueService.waitFor, watch-job.lua.ts) and the channel their
-- outcome is announced on: the shard's '<shard>:waited' hash (id -> the waiter's publish command,
-- 'publish' or 'spublish') and '<shard>:outcomes' (RedisKeySpace.topic names both). A script that
-- finishes a job announces it only when that hash holds its id, so a topic nobody waits on pays
-- one EXISTS per script run and publishes nothing.
local WAITED = SHARD .. ':waited'
local anyWaited = nil

-- Announces that job 'id' finished ('c' completed, detail its result JSON or ''; 'd' dead, detail its
-- failure as stored; 'x' cancelled, detail '') to the processes waiting for it, as
-- '<kind><id length>:<id><detail>', and forgets that it was waited for: an outcome is announced once.
local function announceOutcome(id, kind, detail)
  if anyWaited == nil then anyWaited = redis.call('exists', WAITED) == 1 end
  if not anyWaited then return end
  local command = redis.call('hget', WAITED, id)
  if not command then return end
  redis.call('hdel', WAITED, id)
  redis.call(command, SHARD .. ':outcomes', kind .. #id .. ':' .. id .. (detail or ''))
end

-- A job that was out (claimed, or waiting for a retry) goes dead: its group may start the next one.
local function bury(id, body, errorJson, maxCount, maxAge)
  groupJobFinished(body)
  announceOutcome(id, 'd', errorJson)
  if maxCount <= 0 then
    redis.call('hdel', JOBS, id)
    dropLogs(id)
    return
  end
  redis.call('hset', JOBS, id, withError(body, errorJson))
  redis.call('zadd', DEAD, nowMs, id)
  trimDead(maxCount, maxAge)
end
`,
};
