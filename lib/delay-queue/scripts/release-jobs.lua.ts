import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Hands claimed jobs back to the queue at their original due time (so they keep their place), for
 * another consumer to take at once: used at shutdown. A job whose handler never started gets its
 * attempt back.
 *
 * KEYS  the five topic keys (see lua-snippets.ts)
 * ARGV[1] '1' to undo the attempt count, ARGV[2..] triples: id, claim token, due ms
 *
 * Returns how many were handed back.
 */
export const releaseJobsScript = new RedisScript(
  'releaseJobs',
  `
local undo = ARGV[1] == '1'
local released = 0
for i = 2, #ARGV, 3 do
  local id = ARGV[i]
  local body = ownedBody(id, ARGV[i + 1])
  if body then
    redis.call('zrem', ACTIVE, id)
    if undo then redis.call('hset', JOBS, id, withAttempts(body, math.max(0, (attemptsOf(body) or 1) - 1))) end
    redis.call('zadd', DUE, scoreFor(tonumber(ARGV[i + 2])), id)
    released = released + 1
  end
end
if released > 0 then wake(nowMs) end
return released
`,
  [LUA_TOPIC_PRELUDE],
);
