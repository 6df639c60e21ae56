import { JobScript } from './job-script.js';
import { LUA_DROP_JOB } from './drop-job-lua-snippet.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Hands claimed jobs back to the queue at the very score they were claimed from (due time and FIFO
 * slot, so they keep their place ahead of jobs due later or scheduled after them), for another
 * consumer to take at once: used at shutdown, and for prefetched jobs a busy consumer cannot start
 * soon (JobRunner). A job whose handler never started gets its attempt back, or, when it was claimed
 * before the shard's last `drain()`, is removed as the drain would have removed it
 * (drop-job-lua-snippet.ts). Its claim token stays in the body, so its next claim's fence is above it.
 * Safe to run twice: a job is handed back (or removed) only while it is still claimed under the given
 * token.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the drain mark, the completed zset
 * and results hash; whether the handlers never started (undo the attempt count), then one record
 * per job: id, claim token, due score (as claimed)
 *
 * Returns how many were handed back.
 */
export const releaseJobsScript = new JobScript(
  'releaseJobs',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'drained', 'completed', 'results'],
    args: { undoAttempt: 'flag' },
    repeated: { name: 'jobs', fields: ['id', 'token', 'dueScore'] },
    decode: (reply) => ({ released: Number(reply) }),
  },
  `
local undo = ARG.undoAttempt
local released = 0
for i = JOBS_FROM, #ARGV, JOBS_STRIDE do
  local id = ARGV[i]
  local body = ownedBody(id, ARGV[i + 1])
  if body and undo and claimedBeforeDrain(ARGV[i + 1]) then
    redis.call('zrem', ACTIVE, id)
    groupJobFinished(body)
    dropJob(id, body)
  elseif body then
    redis.call('zrem', ACTIVE, id)
    if undo then
      body = withAttempts(body, math.max(0, (attemptsOf(body) or 1) - 1))
      redis.call('hset', JOBS, id, body)
    end
    queueDue(id, tonumber(ARGV[i + 2]), body)
    released = released + 1
  else
    releaseHeldTurn(ARGV[i + 1]) -- cancelled or replaced before or while it ran: nothing of it runs here
  end
end
if released > 0 then wake(nowMs) end
return released
`,
  [LUA_TOPIC_PRELUDE, LUA_DROP_JOB],
);
