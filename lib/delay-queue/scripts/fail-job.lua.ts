import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Records a failed delivery: back to the queue after a backoff, or into the dead-letter set.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys; the job's id and claim token, the
 * retry delay (-1: dead letter), the failure as stored (job-codec.ts: encodeFailure), the dead-letter bounds.
 *
 * Returns 1 requeued, 2 dead-lettered, 0 the job is not claimed under that token any more (ignored),
 * decoded as 'requeued' | 'dead' | 'not-held'.
 * A second run of the same call changes nothing (the job left ACTIVE) and answers as the first: the
 * job still carries the claim token (only a new claim changes it), in DUE or DEAD.
 */
export const failJobScript = new JobScript(
  'failJob',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker'],
    args: { id: 'text', token: 'text', retryDelayMs: 'int', errorJson: 'text', deadMaxCount: 'int', deadMaxAgeMs: 'int' },
    decode: (reply) => (Number(reply) === 1 ? 'requeued' : Number(reply) === 2 ? 'dead' : 'not-held'),
  },
  `
local id, retryDelay, errorJson = ARG.id, ARG.retryDelayMs, ARG.errorJson
local body = ownedBody(id, ARG.token)
if not body then
  releaseHeldTurn(ARG.token) -- cancelled or replaced while it ran: its handler has returned
  local stored = redis.call('hget', JOBS, id)
  if stored and tokenOf(stored) == ARG.token then
    if redis.call('zscore', DEAD, id) then return 2 end
    if redis.call('zscore', DUE, id) then return 1 end
  end
  return 0
end
redis.call('zrem', ACTIVE, id)
if retryDelay < 0 then
  bury(id, body, errorJson, ARG.deadMaxCount, ARG.deadMaxAgeMs)
  return 2
end
local headBefore = headScore()
local score = scoreFor(nowMs + retryDelay)
local failed = withError(body, errorJson)
redis.call('hset', JOBS, id, failed)
queueDue(id, score, failed)
if headBefore == nil or score < headBefore then wake(math.floor(score / SLOTS)) end
return 1
`,
  [LUA_TOPIC_PRELUDE],
);
