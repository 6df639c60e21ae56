import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_DEDUPE_KEY } from './dedupe-lua-snippet.js';

/**
 * Lua: removing a job for good as `drain()` does, and the drain's mark on claims made before it.
 *
 * `<shard>:drained` (KEY.drained) holds the shard's fencing counter (KEY.fence) as the last drain
 * found it: every job claimed on the shard before that drain has a claim token at or under it. A job
 * claimed ahead of its consumer's free slots and handed back unstarted after the drain
 * (release-jobs) is removed then, as the drain would have removed it had it still been waiting.
 * Its callers declare KEY.completed and KEY.results (forgetCompleted, lua-snippets.ts).
 */
export const LUA_DROP_JOB: LuaSnippet = {
  name: 'dropJob',
  requires: [LUA_DEDUPE_KEY],
  source: `
-- Everything of a removed job but its place (DUE, its group's queue or ACTIVE: left to the caller):
-- its dedupe key, body, log and kept completed record; a waitFor hears it was cancelled.
local function dropJob(id, body)
  releaseDedupe(id, body)
  redis.call('hdel', JOBS, id)
  dropLogs(id)
  forgetCompleted(id)
  announceOutcome(id, 'x')
end

-- A drain marks every claim made so far on the shard (the counter only grows, so neither does the mark).
local function markDrained()
  local claimedUpTo = tonumber(redis.call('get', KEY.fence) or '0')
  if claimedUpTo > tonumber(redis.call('get', KEY.drained) or '0') then redis.call('set', KEY.drained, claimedUpTo) end
end

-- Whether the claim under token was made before the shard's last drain.
local function claimedBeforeDrain(token)
  local drained = redis.call('get', KEY.drained)
  return drained ~= false and tonumber(token) <= tonumber(drained)
end
`,
};
