import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_COMPLETE_JOB } from './complete-job-lua-snippet.js';

/**
 * Acknowledges finished jobs: each is acknowledged (completeJob, complete-job-lua-snippet.ts) if it
 * is still claimed under the given token (a job cancelled, replaced or re-delivered meanwhile is left
 * alone). A second run of the same call finds the jobs out of ACTIVE and changes nothing.
 *
 * KEYS  the five topic keys (see lua-snippets.ts); for a consumer that keeps completed jobs, also
 *       KEYS[6] the completed zset and KEYS[7] the results hash
 * ARGV  without KEYS[6]: pairs id, claim token. With KEYS[6]: ARGV[1] most kept (0: no bound),
 *       ARGV[2] ms kept (0: no bound), then triples id, claim token, result JSON ('' for none)
 *
 * Returns how many were acknowledged. Kept completed jobs over a bound beyond this call's trim step
 * (see complete-job-lua-snippet.ts) are left to the consumer's next claims.
 */
export const ackJobsScript = new RedisScript(
  'ackJobs',
  `
local keep, first, stride = nil, 1, 2
if KEYS[6] then keep, first, stride = keepOf(KEYS[6], KEYS[7], ARGV[1], ARGV[2]), 3, 3 end
local ids, bodies = ownedBodies(first, stride)
for k, id in ipairs(ids) do
  local at = first + stride * (k - 1)
  if bodies[k] then
    completeJob(id, bodies[k], keep and ARGV[at + 2], keep)
  else
    releaseHeldTurn(ARGV[at + 1]) -- cancelled or replaced while it ran: its handler has returned
  end
end
local acked = finishCompletions(keep)
return acked
`,
  [LUA_COMPLETE_JOB],
);
