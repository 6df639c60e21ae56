import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Records a running job's progress (`JobContext.progress`) in its header's `progress` field (see
 * jobs/job-fields.ts), replacing the previous one, if the job is still claimed under the given token: a
 * delivery that lost its job (cancelled, replaced, visibility passed and claimed again) writes
 * nothing. It stays through retries until the next progress() call, and with a kept completed job.
 *
 * KEYS  the five topic keys, KEYS[6] unused, KEYS[7] the shard's cancel tombstones (see
 *       cancel-job.lua.ts; the same keys as extend-jobs)
 * ARGV[1] id, ARGV[2] claim token, ARGV[3] the progress as a JSON string (the JSON text, quoted)
 *
 * Returns 1 recorded, 2 the job was cancelled while this delivery ran (its tombstone: the caller
 * learns it as a cancel even when the cancel notice was lost), 0 the job is not claimed under that
 * token for another reason. A second run of the same call writes the same value again.
 */
export const setProgressScript = new RedisScript(
  'setProgress',
  `
local id = ARGV[1]
local body = ownedBody(id, ARGV[2])
if not body then
  if KEYS[7] and redis.call('zscore', KEYS[7], ARGV[2] .. ':' .. id) then return 2 end
  return 0
end
redis.call('hset', JOBS, id, withJobFields(body, { progress = ARGV[3] }))
return 1
`,
  [LUA_TOPIC_PRELUDE],
);
