import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Puts dead letters back in the queue, due now, with their attempts reset (the last error is kept
 * until the next failure overwrites it).
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the call's operation record
 * (see lua-snippets.ts); one job's id, or '' for the oldest dead letters, and how many at most
 * (`limit`, when `id` is '').
 *
 * Returns how many were requeued (decoded as `requeued`). A second run of the same call answers as
 * the first and requeues nothing more (without the record it would take the next-oldest dead letters).
 */
export const retryDeadJobsScript = new JobScript(
  'retryDeadJobs',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record'],
    args: { id: 'text', limit: 'int' },
    decode: (reply) => ({ requeued: Number(reply) }),
  },
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local ids = { ARG.id }
if ARG.id == '' then ids = redis.call('zrange', DEAD, 0, ARG.limit - 1) end
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
        queueDue(id, scoreFor(nowMs), body)
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
