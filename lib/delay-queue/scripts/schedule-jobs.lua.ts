import { JobScript, jobWritten } from './job-script.js';
import { LUA_DEDUPE_WRITE } from './dedupe-lua-snippet.js';
import { LUA_STORE_JOB } from './store-job-lua-snippet.js';

/**
 * Stores jobs and queues them by due time, in one step per batch.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the call's operation record
 * (see lua-snippets.ts), used only when `recorded`: asked for a batch with `replace` jobs and for
 * writes after a commit, which may be retried; the completed zset and results hash (a replaced
 * job's kept completion goes with it); then one record per job: id, kind ('d' delay from
 * TIME | 'a' absolute ms), when, replace ('1'|'0'), body tail (see job-codec.ts), dedupe ('' or
 * its stored form, dedupe-spec.ts: the job goes through writeDeduped, dedupe-lua-snippet.ts).
 *
 * Returns one status per job: 1 stored, 0 an existing job with that id was kept, 2 replaced it; for a
 * job with a dedupe, the pair of its status and the id of the job concerned (its own, or the one
 * holding its key); decoded as `JobWritten`s (job-script.ts) in the jobs' order. A call with a dedupe
 * job is always asked for with a record (job-enqueuer.ts).
 * Wakes a consumer when the batch brings the earliest due time forward. A second run of a call with
 * a record answers as the first and writes nothing: it neither replaces again (a job claimed in
 * between would run twice) nor re-creates a job that already ran and was acknowledged.
 */
export const scheduleJobsScript = new JobScript(
  'scheduleJobs',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record', 'completed', 'results'],
    args: { recorded: 'flag' },
    repeated: { name: 'writes', fields: ['id', 'kind', 'when', 'replace', 'tail', 'dedupe'] },
    decode: (reply) => (reply as unknown[]).map(jobWritten),
  },
  `
-- KEY.record is the prelude's OPERATION (KEYS[6]); a call that asks for no record writes none.
if not ARG.recorded then OPERATION = nil end
local prior = recordedReply()
if prior then return cjson.decode(prior) end
local headBefore = headScore()
local earliest = nil
local result = {}
for i = WRITES_FROM, #ARGV, WRITES_STRIDE do
  local id, kind, when, replace, tail = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3] == '1', ARGV[i + 4]
  local dedupe = ARGV[i + 5]
  local status, score
  if dedupe ~= '' then
    local holder
    status, holder, score = writeDeduped(id, dedupe, kind, when, tail)
    result[#result + 1] = { status, holder }
  else
    status = makeRoomFor(id, replace)
    if status ~= 0 then score = storeJob(id, dueMsOf(kind, when), tail) end
    result[#result + 1] = status
  end
  if score and (earliest == nil or score < earliest) then earliest = score end
end
if earliest ~= nil and (headBefore == nil or earliest < headBefore) then
  wake(math.floor(earliest / SLOTS))
end
recordReply(cjson.encode(result))
return result
`,
  [LUA_STORE_JOB, LUA_DEDUPE_WRITE],
);
