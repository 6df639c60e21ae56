import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_REPEAT } from './repeat-lua-snippets.js';

/**
 * Reads repeatable schedules of one shard with where each one's queued tick job is. Read-only.
 *
 * KEYS  see repeat-lua-snippets.ts (KEYS[6] unused)
 * ARGV[1] a schedule id, or '' for every schedule of the shard (at most ARGV[2] of them, by next tick)
 *
 * Returns { nowMs, { id, stored form, tick, job state ('w' waiting | 'a' active | 'd' dead | '' gone),
 *           last claimed tick or '', definition time (KEYS[11], µs) or '', runs so far, ticks
 *           queued (KEYS[12]; see repeat-lua-snippets.ts), ... }, nowUs }.
 */
export const readRepeatsScript = new RedisScript(
  'readRepeats',
  `
local ids = oneIdOrFirst(REPEAT_NEXT)
local rows = {}
for _, id in ipairs(ids) do
  local stored = redis.call('hget', REPEATS, id)
  local tick = redis.call('zscore', REPEAT_NEXT, id)
  if stored and tick then
    local jobId = tickJobId(id, tonumber(tick))
    local state = ''
    if redis.call('zscore', DUE, jobId) then state = 'w'
    elseif redis.call('zscore', ACTIVE, jobId) then state = 'a'
    elseif redis.call('zscore', DEAD, jobId) then state = 'd' end
    rows[#rows + 1] = id
    rows[#rows + 1] = stored
    rows[#rows + 1] = tick
    rows[#rows + 1] = state
    rows[#rows + 1] = redis.call('zscore', REPEAT_LAST, id) or ''
    rows[#rows + 1] = redis.call('zscore', REPEAT_DEFINED, id) or ''
    rows[#rows + 1] = runsOf(id, tick)
    rows[#rows + 1] = queuedOf(id)
  end
end
return { nowMs, rows, nowUs }
`,
  [LUA_REPEAT],
);
