import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Gives a job that is not running a new payload for its next run: one waiting for its time, due,
 * waiting for a retry (all in DUE) or waiting in its group's queue. A job claimed (ACTIVE), dead,
 * kept completed, unknown, or whose body this version cannot read is left alone. The header is
 * rewritten through the header snippet (attempts, failure, progress, group and the fields of a later
 * format kept); the payload is copied as sent, never decoded here.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the call's operation record
 * (see lua-snippets.ts); the job's id and its new payload as JSON (checked by the caller).
 *
 * Returns 1 if the payload was replaced, 0 otherwise (decoded as `updated`). A second run of the same
 * call answers as the first and writes nothing more (the job may have been claimed in between).
 */
export const updatePayloadScript = new JobScript(
  'updatePayload',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record'],
    args: { id: 'text', payload: 'text' },
    decode: (reply) => ({ updated: Number(reply) === 1 }),
  },
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local id = ARG.id
local body = redis.call('hget', JOBS, id)
local waiting = body and (redis.call('zscore', DUE, id) or groupQueueScore(id, body))
local job = waiting and jobHeader(body)
if not job then
  recordReply(0)
  return 0
end
redis.call('hset', JOBS, id, jobBody(job, ARG.payload, 1, #ARG.payload))
recordReply(1)
return 1
`,
  [LUA_TOPIC_PRELUDE],
);
