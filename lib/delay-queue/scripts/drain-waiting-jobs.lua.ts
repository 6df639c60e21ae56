import { JobScript } from './job-script.js';
import { LUA_DROP_JOB } from './drop-job-lua-snippet.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * One batch of `drain(topic)` on one shard: removes up to `batch` waiting jobs, first from DUE
 * (scheduled, due, and jobs waiting for a retry), then from the groups' queues (the index
 * `<shard>:groups-waiting`, group-lua-snippet.ts). Running jobs (ACTIVE), dead letters and kept
 * completed jobs stay. Each removal keeps the groups consistent as a cancel does: a job of a group
 * in DUE was out (its retry kept its group's turn), so its turn is released; a job in its group's
 * queue leaves it through removeFromGroup. A kept completed record of the same id goes too, and a
 * `waitFor` of the job hears it was cancelled and its dedupe key is freed (as a cancel's); a job leaves DUE through unqueueDue,
 * so a topic with priorities keeps PRIORITIZED within DUE (topic-base-lua-snippet.ts). Bounded work per call: the caller
 * loops over batches (delay-queue/job-commands.ts).
 *
 * Each batch first marks the claims made so far (drop-job-lua-snippet.ts): a job claimed ahead of a
 * consumer's free slots, not started, is removed when that consumer hands it back.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the call's operation record, the
 * completed zset and results hash, the shard's fencing counter and drain mark; the batch size.
 *
 * Returns how many jobs it removed (decoded as `removed`). A second run of the same call answers as
 * the first and removes nothing more.
 */
export const drainWaitingJobsScript = new JobScript(
  'drainWaitingJobs',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record', 'completed', 'results', 'fence', 'drained'],
    args: { batch: 'int' },
    decode: (reply) => ({ removed: Number(reply) }),
  },
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
markDrained()
local removed = 0
local ids = redis.call('zrange', DUE, 0, ARG.batch - 1)
for _, id in ipairs(ids) do
  local body = redis.call('hget', JOBS, id)
  if body then
    groupJobFinished(body)
    dropJob(id, body)
  end
  unqueueDue(id)
  removed = removed + 1
end
if removed < ARG.batch then
  local grouped = redis.call('zrange', GROUPS_WAITING, 0, ARG.batch - removed - 1)
  for _, id in ipairs(grouped) do
    local body = redis.call('hget', JOBS, id)
    if not (body and removeFromGroup(id, body)) then redis.call('zrem', GROUPS_WAITING, id) end
    if body then dropJob(id, body) end
    removed = removed + 1
  end
end
recordReply(removed)
return removed
`,
  [LUA_TOPIC_PRELUDE, LUA_DROP_JOB],
);
