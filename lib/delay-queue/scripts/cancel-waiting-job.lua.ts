import { JobScript } from './job-script.js';
import { LUA_DEDUPE_KEY } from './dedupe-lua-snippet.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/** What `cancelWaiting` found. */
export type CancelWaitingOutcome = 'cancelled' | 'running' | 'not-waiting';

/**
 * Cancels one job that is still waiting (scheduled or due, not yet claimed). Unlike `cancelJob`, a
 * job a consumer is running is left alone: an operator acting on a list a few seconds old must not
 * pull a job out from under its handler.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the call's operation record
 * (see lua-snippets.ts); the job's id.
 *
 * Returns 1 when cancelled, -1 when the job is running, 0 when it is not waiting (done, dead or
 * unknown), decoded as `CancelWaitingOutcome`; a second run of the same call answers as the first.
 */
export const cancelWaitingJobScript = new JobScript(
  'cancelWaitingJob',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record'],
    args: { id: 'text' },
    decode: (reply): CancelWaitingOutcome => (Number(reply) === 1 ? 'cancelled' : Number(reply) === -1 ? 'running' : 'not-waiting'),
  },
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local id = ARG.id
local outcome = 0
local body = redis.call('hget', JOBS, id)
if unqueueDue(id) == 1 then
  groupJobFinished(body) -- a job of a group waiting for its retry held its group's turn
  releaseDedupe(id, body)
  redis.call('hdel', JOBS, id)
  dropLogs(id)
  outcome = 1
elseif redis.call('zscore', ACTIVE, id) then
  outcome = -1
elseif body and removeFromGroup(id, body) then
  releaseDedupe(id, body)
  redis.call('hdel', JOBS, id)
  dropLogs(id)
  outcome = 1
end
if outcome == 1 then announceOutcome(id, 'x') end
recordReply(outcome)
return outcome
`,
  [LUA_TOPIC_PRELUDE, LUA_DEDUPE_KEY],
);
