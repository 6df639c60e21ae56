import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Cancels one job that is still waiting (scheduled or due, not yet claimed). Unlike `cancelJob`, a
 * job a consumer is running is left alone: an operator acting on a list a few seconds old must not
 * pull a job out from under its handler.
 *
 * KEYS  the five topic keys, and the call's operation record (see lua-snippets.ts)
 * ARGV[1] job id
 *
 * Returns 1 when cancelled, -1 when the job is running, 0 when it is not waiting (done, dead or unknown);
 * a second run of the same call answers as the first.
 */
export const cancelWaitingJobScript = new RedisScript(
  'cancelWaitingJob',
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local outcome = 0
local body = redis.call('hget', JOBS, ARGV[1])
if redis.call('zrem', DUE, ARGV[1]) == 1 then
  groupJobFinished(body) -- a job of a group waiting for its retry held its group's turn
  redis.call('hdel', JOBS, ARGV[1])
  outcome = 1
elseif redis.call('zscore', ACTIVE, ARGV[1]) then
  outcome = -1
elseif body and removeFromGroup(ARGV[1], body) then
  redis.call('hdel', JOBS, ARGV[1])
  outcome = 1
end
recordReply(outcome)
return outcome
`,
  [LUA_TOPIC_PRELUDE],
);
