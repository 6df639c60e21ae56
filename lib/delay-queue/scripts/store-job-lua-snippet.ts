import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Lua: storing a new job, as schedule-jobs, write-outbox-job and the repeat scripts do. A schedule
 * with an id that exists keeps the existing job (de-duplication) unless it asks to replace it.
 */
export const LUA_STORE_JOB: LuaSnippet = {
  name: 'storeJob',
  requires: [LUA_TOPIC_PRELUDE],
  source: `
-- Makes room for a job with this id: 0 when one exists and is kept, 2 when one existed and was
-- taken out of every state to be replaced (replace true), 1 when there was none. Its callers
-- declare KEY.completed and KEY.results (forgetCompleted).
local function makeRoomFor(id, replace)
  local body = redis.call('hget', JOBS, id)
  if not body then return 1 end
  if not replace then return 0 end
  local deadline = redis.call('zscore', ACTIVE, id)
  if unqueueDue(id) == 1 then
    groupJobFinished(body)
  elseif deadline then
    redis.call('zrem', ACTIVE, id)
    holdGroupTurn(body, tonumber(deadline)) -- its run may still go on: see group-lua-snippet.ts
  elseif redis.call('zrem', DEAD, id) == 0 then
    removeFromGroup(id, body)
  end
  forgetCompleted(id)
  dropLogs(id) -- the job that replaces it starts a log of its own
  return 2
end

-- The due ms of a job given as kind 'd' (when: a delay from TIME) or 'a' (when: an absolute ms).
local function dueMsOf(kind, when)
  if kind == 'd' then return nowMs + when end
  return when
end

-- Stores a fresh body (no attempt yet, created now) and queues it at dueMs: in DUE, or in its
-- group's queue. Returns the score a consumer must wake for: its due score, its group's turn, or
-- math.huge when its group is busy.
local function storeJob(id, dueMs, tail)
  local body = newJobBody(nowMs, tail)
  redis.call('hset', JOBS, id, body)
  local group = groupOf(body)
  if group then return addToGroup(group, id, groupScoreFor(group, dueMs)) or math.huge end
  if priorityOf(body) > 0 then usePriorities() end
  local score = scoreFor(dueMs)
  queueDue(id, score, body)
  return score
end
`,
};
