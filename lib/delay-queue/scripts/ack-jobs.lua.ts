import { JobScript } from './job-script.js';
import { LUA_COMPLETE_JOB } from './complete-job-lua-snippet.js';

/**
 * Acknowledges finished jobs (`acknowledge`, complete-job-lua-snippet.ts): each is acknowledged if it
 * is still claimed under the given token (a job cancelled, replaced or re-delivered meanwhile is left
 * alone). A second run of the same call finds the jobs out of ACTIVE and changes nothing.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the completed zset and the results
 * hash (used only when `keepsCompleted`); the keep bounds (0: no bound), then one record per
 * acknowledgement: id, claim token, result JSON ('' for none).
 *
 * Returns how many were acknowledged. Kept completed jobs over a bound beyond this call's trim step
 * (see complete-job-lua-snippet.ts) are left to the consumer's next claims.
 */
export const ackJobsScript = new JobScript(
  'ackJobs',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'completed', 'results'],
    args: { keepsCompleted: 'flag', keepCount: 'int', keepAgeMs: 'int' },
    repeated: { name: 'acks', fields: ['id', 'token', 'result'] },
    decode: (reply) => ({ acked: Number(reply) }),
  },
  `
local keep = keepOf(ARG.keepsCompleted, KEY.completed, KEY.results, ARG.keepCount, ARG.keepAgeMs)
local acked = acknowledge(ACKS_FROM, ACKS_STRIDE, keep)
return acked
`,
  [LUA_COMPLETE_JOB],
);
