import { JobScript } from './job-script.js';
import { decodeJobRead } from './read-job-lua-snippet.js';
import { LUA_READ_JOB } from './read-job-lua-snippet.js';

/**
 * Reads one job for a waiter (`DelayQueueService.waitFor`) and, when it has not finished yet (it
 * waits, runs, or waits for a retry), records in the shard's waited hash that a process waits for
 * it, in the same snapshot: every script that later finishes it (acknowledge, bury, cancel; see
 * announceOutcome in lua-snippets.ts) then publishes its outcome on the shard's outcome channel. The
 * waiter subscribes that channel before it runs this, so an outcome is either in this read or
 * published to it. The entry stays until the job finishes (one entry per id, whoever waits).
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the completed zset, the results
 * hash and the waited hash; the job's id and the publish command of the waiter's connection
 * ('publish', or 'spublish' on a cluster), stored as the entry's value for announceOutcome.
 *
 * Returns readJobState's snapshot (read-job-lua-snippet.ts), decoded into a JobRead. A second run
 * of the same call writes the same entry again and answers the job's state then.
 */
export const watchJobScript = new JobScript(
  'watchJob',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'completed', 'results', 'waited'],
    args: { id: 'text', publishCommand: 'text' },
    decode: decodeJobRead,
  },
  `
local read = readJobState(ARG.id)
-- read[2] the body, read[5] the time of death, read[6] finishedAt
if read[2] and not (read[5] or read[6]) then redis.call('hset', KEY.waited, ARG.id, ARG.publishCommand) end
return read
`,
  [LUA_READ_JOB],
);
