import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * How long a tombstone outlives the visibility deadline of the job it names, in ms: covers an
 * extension sent just before that deadline and reaching Redis a little after it.
 */
const TOMBSTONE_MARGIN_MS = 5_000;

/**
 * Deletes a job wherever it is (waiting, running or dead). A job that was running (claimed) is
 * announced on the shard's cancel channel as `<claim token>:<id>`, so the consumer running it aborts
 * its handler's signal at once, and leaves a tombstone under the same name until the claim's
 * visibility deadline (plus a margin) for a consumer that missed the message: its next visibility
 * extension, which comes before that deadline, reads it (extend-jobs). Expired tombstones are
 * trimmed here and the zset expires with its latest one, so it holds only jobs cancelled within
 * one visibility timeout. A waiting or dead job leaves nothing behind.
 *
 * KEYS  the five topic keys, the call's operation record (see lua-snippets.ts), KEYS[7] the
 *       shard's cancel tombstones (zset), KEYS[8] its cancel channel
 * ARGV[1] id, ARGV[2] 'publish' or 'spublish' (a cluster's sharded pub/sub)
 *
 * Returns 1 if the job existed, 0 if not; a second run of the same call answers as the first (the
 * job is gone by then, so it announces nothing again).
 */
export const cancelJobScript = new RedisScript(
  'cancelJob',
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local TOMBSTONES, CHANNEL = KEYS[7], KEYS[8]
local id = ARGV[1]
local body = redis.call('hget', JOBS, id)
local existed = redis.call('hdel', JOBS, id)
redis.call('zrem', DEAD, id)
local wasDue = redis.call('zrem', DUE, id)
local deadline = redis.call('zscore', ACTIVE, id)
if body then
  if wasDue == 1 then groupJobFinished(body)
  elseif deadline then holdGroupTurn(body, tonumber(deadline))
  else removeFromGroup(id, body) end
  forgetCompleted(id)
end
if deadline then
  redis.call('zrem', ACTIVE, id)
  local token = body and tokenOf(body)
  if token then
    local name = token .. ':' .. id
    redis.call('zremrangebyscore', TOMBSTONES, '-inf', '(' .. fmt(nowMs))
    redis.call('zadd', TOMBSTONES, fmt(tonumber(deadline) + ${TOMBSTONE_MARGIN_MS}), name)
    local latest = redis.call('zrange', TOMBSTONES, -1, -1, 'withscores')
    redis.call('pexpireat', TOMBSTONES, fmt(tonumber(latest[2])))
    redis.call(ARGV[2], CHANNEL, name)
  end
end
recordReply(existed)
return existed
`,
  [LUA_TOPIC_PRELUDE],
);
