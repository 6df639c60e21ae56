import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Lua: one job and where it is, in one snapshot (`readJobState`), shared by read-job and watch-job.
 * Its callers declare the shard's completed zset and results hash as KEY.completed and KEY.results.
 *
 * Returns { nowMs, body|false, due score|false, visibility deadline|false, time of death|false,
 * finishedAt|false, result JSON|false, in its group's queue (0|1) }; the due score is also that of a
 * job waiting in its group's queue (see group-lua-snippet.ts), which reads 'waiting-group'.
 * finishedAt and the result are read only for a job in none of DUE, ACTIVE, DEAD and its group's
 * queue (a kept completed job; an id scheduled again is that new job).
 */
export const LUA_READ_JOB: LuaSnippet = {
  name: 'readJobState',
  requires: [LUA_TOPIC_PRELUDE],
  source: `
local function readJobState(id)
  local body, due, active, dead = redis.call('hget', JOBS, id), redis.call('zscore', DUE, id),
    redis.call('zscore', ACTIVE, id), redis.call('zscore', DEAD, id)
  local inGroupQueue = 0
  if body and not due then
    due = groupQueueScore(id, body) or false
    if due then inGroupQueue = 1 end
  end
  local finished, result = false, false
  if body and not (due or active or dead) then
    finished = redis.call('zscore', KEY.completed, id)
    if finished then result = redis.call('hget', KEY.results, id) end
  end
  return { nowMs, body, due, active, dead, finished, result, inGroupQueue }
end
`,
};
