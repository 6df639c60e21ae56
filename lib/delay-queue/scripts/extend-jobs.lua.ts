import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Pushes back the visibility deadline of jobs still running, like a lock lease renewal.
 *
 * KEYS  the five topic keys (see lua-snippets.ts)
 * ARGV[1] visibility timeout ms, ARGV[2..] pairs: id, claim token
 *
 * Returns one flag per job: 1 extended, 0 no longer claimed under that token (cancelled, replaced,
 * or expired and possibly re-delivered elsewhere).
 */
export const extendJobsScript = new RedisScript(
  'extendJobs',
  `
local deadline = nowMs + tonumber(ARGV[1])
local result = {}
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  if ownedBody(id, ARGV[i + 1]) then
    redis.call('zadd', ACTIVE, 'xx', deadline, id)
    result[#result + 1] = 1
  else
    result[#result + 1] = 0
  end
end
return result
`,
  [LUA_TOPIC_PRELUDE],
);
