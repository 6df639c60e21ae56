import { claimOutcome, JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Records a running job's progress (`JobContext.progress`) in its header's `progress` field (see
 * jobs/job-fields.ts), replacing the previous one, if the job is still claimed under the given token: a
 * delivery that lost its job (cancelled, replaced, visibility passed and claimed again) writes
 * nothing. It stays through retries until the next progress() call, and with a kept completed job.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the shard's cancel tombstones
 * (see cancel-job.lua.ts); the job's id and claim token, the progress as a JSON string (the JSON text, quoted)
 *
 * Returns 1 recorded, 2 the job was cancelled while this delivery ran (its tombstone: the caller
 * learns it as a cancel even when the cancel notice was lost), 0 the job is not claimed under that
 * token for another reason (decoded as extend-jobs' 'held' | 'cancelled' | 'lost'). A second run of
 * the same call writes the same value again.
 */
export const setProgressScript = new JobScript(
  'setProgress',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'cancelled'],
    args: { id: 'text', token: 'text', progressJson: 'text' },
    decode: claimOutcome,
  },
  `
local id = ARG.id
local body = ownedBody(id, ARG.token)
if not body then
  if redis.call('zscore', KEY.cancelled, ARG.token .. ':' .. id) then return 2 end
  return 0
end
redis.call('hset', JOBS, id, withJobFields(body, { progress = ARG.progressJson }))
return 1
`,
  [LUA_TOPIC_PRELUDE],
);
