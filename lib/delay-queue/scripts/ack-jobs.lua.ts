import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Acknowledges finished jobs: each is deleted if it is still claimed under the given token (a job
 * cancelled, replaced or re-delivered meanwhile is left alone). Completed jobs are not kept.
 *
 * KEYS  the five topic keys (see lua-snippets.ts)
 * ARGV  pairs: id, claim token
 *
 * Returns how many were acknowledged.
 */
export const ackJobsScript = new RedisScript(
  'ackJobs',
  `
local acked = 0
for i = 1, #ARGV, 2 do
  local id = ARGV[i]
  local body = ownedBody(id, ARGV[i + 1])
  if body then
    groupJobFinished(body)
    redis.call('zrem', ACTIVE, id)
    redis.call('hdel', JOBS, id)
    acked = acked + 1
  end
end
return acked
`,
  [LUA_TOPIC_PRELUDE],
);
