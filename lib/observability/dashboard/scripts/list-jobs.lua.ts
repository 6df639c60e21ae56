import { RedisScript } from '../../../redis/redis-script';
import { LUA_PRELUDE } from '../../../delay-queue/scripts/lua-prelude';

/**
 * Lists the jobs of one topic in one state, for the dashboard, from one snapshot.
 *
 * KEYS  the five topic keys (see delay-queue/scripts/lua-prelude.ts): due, jobs, active, dead, marker
 * ARGV[1] state: 'due' (due now, oldest first), 'scheduled' (due later, soonest first),
 *         'active' (earliest visibility deadline first) or 'dead' (newest first)
 * ARGV[2] how many at most
 *
 * Returns { nowMs, total in that state, id, body, score, id, body, score, ... }; a job whose body is
 * gone (acknowledged or trimmed meanwhile) is left out. Scores are strings (due scores have 16 digits).
 */
export const listJobsScript = new RedisScript(
  'dashboardListJobs',
  `${LUA_PRELUDE}
local state, limit = ARGV[1], tonumber(ARGV[2])
local dueEnd = fmt((nowMs + 1) * SLOTS)
local rows, total
if state == 'due' then
  rows = redis.call('zrangebyscore', DUE, '-inf', '(' .. dueEnd, 'withscores', 'limit', 0, limit)
  total = redis.call('zcount', DUE, '-inf', '(' .. dueEnd)
elseif state == 'scheduled' then
  rows = redis.call('zrangebyscore', DUE, dueEnd, '+inf', 'withscores', 'limit', 0, limit)
  total = redis.call('zcount', DUE, dueEnd, '+inf')
elseif state == 'active' then
  rows = redis.call('zrange', ACTIVE, 0, limit - 1, 'withscores')
  total = redis.call('zcard', ACTIVE)
elseif state == 'dead' then
  rows = redis.call('zrevrange', DEAD, 0, limit - 1, 'withscores')
  total = redis.call('zcard', DEAD)
else
  return redis.error_reply('ERR unknown job state ' .. state)
end
local result = { nowMs, total }
for i = 1, #rows, 2 do
  local body = redis.call('hget', JOBS, rows[i])
  if body then
    result[#result + 1] = rows[i]
    result[#result + 1] = body
    result[#result + 1] = rows[i + 1]
  end
end
return result
`,
);
