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
-- taken out of every state to be replaced (replace == '1'), 1 when there was none.
local function makeRoomFor(id, replace)
  if redis.call('hexists', JOBS, id) == 0 then return 1 end
  if replace ~= '1' then return 0 end
  redis.call('zrem', DUE, id)
  redis.call('zrem', ACTIVE, id)
  redis.call('zrem', DEAD, id)
  return 2
end

-- The due ms of a job given as kind 'd' (when: a delay from TIME) or 'a' (when: an absolute ms).
local function dueMsOf(kind, when)
  if kind == 'd' then return nowMs + when end
  return when
end

-- Stores a fresh body (no attempt yet, created now) and queues it at dueMs; returns its due score.
local function storeJob(id, dueMs, tail)
  local score = scoreFor(dueMs)
  redis.call('hset', JOBS, id, '{"g":0,"a":0,"c":' .. fmt(nowMs) .. tail)
  redis.call('zadd', DUE, score, id)
  return score
end
`,
};
