import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * One batch of `clean(topic, { state, olderThan, limit })` on one shard: removes up to `batch` of
 * the oldest dead letters ('dead') or kept completed jobs ('completed') whose time of death or
 * completion is more than `olderThanMs` before the server's now. A completed record whose id was
 * scheduled again keeps the new job's body (only the record and its result go). Bounded work per
 * call: the caller loops over batches (delay-queue/job-commands.ts). Dead letters hold no group
 * turn (bury released it), so no group bookkeeping changes.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the call's operation record, the
 * completed zset and results hash; the state, the age in ms and the batch size.
 *
 * Returns how many jobs it removed (decoded as `removed`). A second run of the same call answers as
 * the first and removes nothing more.
 */
export const cleanFinishedJobsScript = new JobScript(
  'cleanFinishedJobs',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record', 'completed', 'results'],
    args: { state: 'text', olderThanMs: 'int', batch: 'int' },
    decode: (reply) => ({ removed: Number(reply) }),
  },
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local key = ARG.state == 'dead' and DEAD or KEY.completed
local ids = redis.call('zrangebyscore', key, '-inf', '(' .. fmt(nowMs - ARG.olderThanMs), 'limit', 0, ARG.batch)
for _, id in ipairs(ids) do
  local elsewhere = ARG.state == 'completed' and (redis.call('zscore', DUE, id) or redis.call('zscore', ACTIVE, id)
    or redis.call('zscore', DEAD, id) or redis.call('zscore', GROUPS_WAITING, id))
  if not elsewhere then
    redis.call('hdel', JOBS, id)
    dropLogs(id)
  end
  redis.call('zrem', key, id)
  if ARG.state == 'completed' then redis.call('hdel', KEY.results, id) end
end
recordReply(#ids)
return #ids
`,
  [LUA_TOPIC_PRELUDE],
);
