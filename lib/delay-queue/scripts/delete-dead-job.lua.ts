import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Deletes one dead letter, and only a dead one: a job retried meanwhile (back in the queue) is kept.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the call's operation record
 * (see lua-snippets.ts); the job's id.
 *
 * Returns 1 when the dead letter was deleted, 0 when the job was not dead (decoded as `deleted`); a
 * second run of the same call answers as the first.
 */
export const deleteDeadJobScript = new JobScript(
  'deleteDeadJob',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record'],
    args: { id: 'text' },
    decode: (reply) => ({ deleted: Number(reply) === 1 }),
  },
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local deleted = redis.call('zrem', DEAD, ARG.id)
if deleted == 1 then
  redis.call('hdel', JOBS, ARG.id)
  dropLogs(ARG.id)
end
recordReply(deleted)
return deleted
`,
  [LUA_TOPIC_PRELUDE],
);
