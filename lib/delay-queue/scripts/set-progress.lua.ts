import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Records a running job's progress (`JobContext.progress`) in its body's `o` field (see
 * job-codec.ts), replacing the previous one, if the job is still claimed under the given token: a
 * delivery that lost its job (cancelled, replaced, visibility passed and claimed again) writes
 * nothing. The field sits before `e`, as a JSON string (no bare quote), so the scripts' searches for
 * `,"e":` and `,"p":` still find the library's own separators; it stays through retries until the
 * next progress() call, and with a kept completed job.
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
local e = string.find(body, ',"e":', 1, true)
if not e then return 0 end
local head = string.sub(body, 1, e - 1)
local o = string.find(head, ',"o":"', 1, true)
if o then head = string.sub(head, 1, o - 1) end
redis.call('hset', JOBS, id, head .. ',"o":' .. ARGV[3] .. string.sub(body, e))
return 1
`,
  [LUA_TOPIC_PRELUDE],
);
