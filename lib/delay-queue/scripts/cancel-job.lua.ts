import { JobScript } from './job-script.js';
import { LUA_DEDUPE_KEY } from './dedupe-lua-snippet.js';
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
 * one visibility timeout. A waiting or dead job leaves nothing behind. A job scheduled with a dedupe
 * frees its key if the key still names it (dedupe-lua-snippet.ts), so the next call creates a job.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the call's operation record (see
 * lua-snippets.ts), the shard's cancel tombstones (zset) and its cancel channel (a key, so that a
 * cluster routes the SPUBLISH by its hash tag), the completed zset and results hash (a kept
 * completion of the job goes with it); the job's id and the publish command ('publish', or
 * 'spublish': a cluster's sharded pub/sub).
 *
 * Returns 1 if the job existed, 0 if not (decoded as `existed`); a second run of the same call
 * answers as the first (the job is gone by then, so it announces nothing again).
 */
export const cancelJobScript = new JobScript(
  'cancelJob',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record', 'cancelled', 'cancelChannel', 'completed', 'results'],
    args: { id: 'text', publishCommand: 'text' },
    decode: (reply) => ({ existed: Number(reply) === 1 }),
  },
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local TOMBSTONES = KEY.cancelled
local id = ARG.id
local body = redis.call('hget', JOBS, id)
local existed = redis.call('hdel', JOBS, id)
dropLogs(id)
redis.call('zrem', DEAD, id)
local wasDue = unqueueDue(id)
local deadline = redis.call('zscore', ACTIVE, id)
if body then
  if wasDue == 1 then groupJobFinished(body)
  elseif deadline then holdGroupTurn(body, tonumber(deadline))
  else removeFromGroup(id, body) end
  forgetCompleted(id)
  releaseDedupe(id, body)
  announceOutcome(id, 'x')
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
    redis.call(ARG.publishCommand, KEY.cancelChannel, name)
  end
end
recordReply(existed)
return existed
`,
  [LUA_TOPIC_PRELUDE, LUA_DEDUPE_KEY],
);
