import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Deletes a job wherever it is (waiting, running or dead). A running handler keeps running but
 * loses its visibility at its next extension, and its acknowledgement is ignored.
 *
 * KEYS  the five topic keys, and the call's operation record (see lua-snippets.ts)
 * ARGV[1] id
 *
 * Returns 1 if the job existed, 0 if not; a second run of the same call answers as the first.
 */
export const cancelJobScript = new RedisScript(
  'cancelJob',
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local id = ARGV[1]
local body = redis.call('hget', JOBS, id)
local existed = redis.call('hdel', JOBS, id)
local out = redis.call('zrem', DUE, id) + redis.call('zrem', ACTIVE, id)
if body then
  if out > 0 then groupJobFinished(body)
  elseif redis.call('zrem', DEAD, id) == 0 then removeFromGroup(id, body) end
end
recordReply(existed)
return existed
`,
  [LUA_TOPIC_PRELUDE],
);
