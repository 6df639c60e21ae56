import { JobScript, writeOutcome } from './job-script.js';
import { LUA_STORE_JOB } from './store-job-lua-snippet.js';

/**
 * Stores jobs and queues them by due time, in one step per batch.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys and the call's operation record
 * (see lua-snippets.ts), used only when `recorded`: asked for a batch with `replace` jobs and for
 * writes after a commit, which may be retried; the completed zset and results hash (a replaced
 * job's kept completion goes with it); then one record per job: id, kind ('d' delay from
 * TIME | 'a' absolute ms), when, replace ('1'|'0'), body tail (see job-codec.ts).
 *
 * Returns one status per job: 1 stored, 0 an existing job with that id was kept, 2 replaced it,
 * decoded as `WriteOutcome`s (job-script.ts) in the jobs' order.
 * Wakes a consumer when the batch brings the earliest due time forward. A second run of a call with
 * a record answers as the first and writes nothing: it neither replaces again (a job claimed in
 * between would run twice) nor re-creates a job that already ran and was acknowledged.
 */
export const scheduleJobsScript = new JobScript(
  'scheduleJobs',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record', 'completed', 'results'],
    args: { recorded: 'flag' },
    repeated: { name: 'writes', fields: ['id', 'kind', 'when', 'replace', 'tail'] },
    decode: (reply) => (reply as number[]).map(writeOutcome),
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
  local status = makeRoomFor(id, replace)
  if status ~= 0 then
    local score = storeJob(id, dueMsOf(kind, when), tail)
    if earliest == nil or score < earliest then earliest = score end
  end
  result[#result + 1] = status
end
if earliest ~= nil and (headBefore == nil or earliest < headBefore) then
  wake(math.floor(earliest / SLOTS))
end
recordReply(cjson.encode(result))
return result
`,
  [LUA_STORE_JOB],
);
