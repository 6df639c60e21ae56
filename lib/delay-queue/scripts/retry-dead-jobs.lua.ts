import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Puts dead letters back in the queue, due now, with their attempts reset (the last error is kept
 * until the next failure overwrites it).
 *
 * KEYS  the five topic keys, and the call's operation record (see lua-snippets.ts)
 * ARGV[1] one id, or '' for the oldest dead letters; ARGV[2] how many at most (when ARGV[1] is '')
 *
 * Returns how many were requeued. A second run of the same call answers as the first and requeues
 * nothing more (without the record it would take the next-oldest dead letters).
 */
export const retryDeadJobsScript = new RedisScript(
  'retryDeadJobs',
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local ids = oneIdOrFirst(DEAD)
local moved = 0
for _, id in ipairs(ids) do
  if redis.call('zrem', DEAD, id) == 1 then
    local body = redis.call('hget', JOBS, id)
    if body and attemptsOf(body) then
      redis.call('hset', JOBS, id, withAttempts(body, 0))
      local group = groupOf(body)
      if group then
        addToGroup(group, id, groupScoreFor(group, nowMs)) -- behind the jobs its group has waiting
      else
        redis.call('zadd', DUE, scoreFor(nowMs), id)
      end
      moved = moved + 1
    elseif body then
      redis.call('zadd', DEAD, nowMs, id) -- unreadable by this version: stays a dead letter
    end
  end
end
if moved > 0 then wake(nowMs) end
recordReply(moved)
return moved
`,
  [LUA_TOPIC_PRELUDE],
);
