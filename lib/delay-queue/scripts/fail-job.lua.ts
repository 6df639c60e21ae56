import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Records a failed delivery: back to the queue after a backoff, or into the dead-letter set.
 *
 * KEYS  the five topic keys (see lua-snippets.ts)
 * ARGV[1] id, ARGV[2] claim token, ARGV[3] retry delay ms (-1: dead letter),
 * ARGV[4] the failure message as a JSON string, ARGV[5] dead-letter max count, ARGV[6] dead-letter max age ms
 *
 * Returns 1 requeued, 2 dead-lettered, 0 the job is not claimed under that token any more (ignored).
 * A second run of the same call changes nothing (the job left ACTIVE) and answers as the first: the
 * job still carries the claim token (only a new claim changes it), in DUE or DEAD.
 */
export const failJobScript = new RedisScript(
  'failJob',
  `
local id, retryDelay, errorJson = ARGV[1], tonumber(ARGV[3]), ARGV[4]
local body = ownedBody(id, ARGV[2])
if not body then
  releaseHeldTurn(ARGV[2]) -- cancelled or replaced while it ran: its handler has returned
  local stored = redis.call('hget', JOBS, id)
  if stored and tokenOf(stored) == ARGV[2] then
    if redis.call('zscore', DEAD, id) then return 2 end
    if redis.call('zscore', DUE, id) then return 1 end
  end
  return 0
end
redis.call('zrem', ACTIVE, id)
if retryDelay < 0 then
  bury(id, body, errorJson, tonumber(ARGV[5]), tonumber(ARGV[6]))
  return 2
end
local headBefore = headScore()
local score = scoreFor(nowMs + retryDelay)
redis.call('hset', JOBS, id, withError(body, errorJson))
redis.call('zadd', DUE, score, id)
if headBefore == nil or score < headBefore then wake(math.floor(score / SLOTS)) end
return 1
`,
  [LUA_TOPIC_PRELUDE],
);
