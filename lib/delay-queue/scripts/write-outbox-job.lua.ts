import { JobScript, writeOutcome, type WriteOutcome } from './job-script.js';
import { LUA_DEDUPE_WRITE } from './dedupe-lua-snippet.js';
import { LUA_STORE_JOB } from './store-job-lua-snippet.js';
import { LUA_WRITE_DEADLINE } from './write-deadline-lua-snippet.js';

/** What a fenced write did: as a schedule, or nothing: the row was `written-before`, or the write came `late`. */
export type FencedWriteOutcome = WriteOutcome | 'written-before' | 'late';

/**
 * Writes the job of one outbox row, fenced (see jobs/write-fence.ts): stores the job and queues it
 * by due time as schedule-jobs.lua.ts does, unless the row was written already or the write is late.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the row's operation record
 * (`op:outbox:<row id>`), the completed zset and results hash (as schedule-jobs); the job's id,
 * kind ('d' delay from TIME, negative for a row relayed after its due time: the job keeps that past
 * due time and its place by it | 'a' absolute ms), when, replace, body tail (see job-codec.ts), and
 * the write's deadline (ms of this server's clock), and the job's dedupe ('' or its stored form: then
 * it goes through writeDeduped, dedupe-lua-snippet.ts, deciding as a schedule does when the row
 * reaches Redis).
 *
 * Returns 1 stored, 0 an existing job with that id was kept, 2 replaced it (decoded as
 * `WriteOutcome`), 3 the row was written already (its record exists: an earlier relay of the row, or
 * a first run of this call; 'written-before'), -1 the server's clock passed the deadline (nothing
 * written; the row is left to the relay; 'late'). The record is checked and set in the same step as
 * the write, so a second run, or a late copy of the write from another relay, changes nothing while
 * the record lives.
 */
export const writeOutboxJobScript = new JobScript(
  'writeOutboxJob',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'record', 'completed', 'results'],
    args: { id: 'text', kind: 'text', when: 'int', replace: 'flag', tail: 'text', deadline: 'int', dedupe: 'text' },
    decode: (reply): FencedWriteOutcome => (Number(reply) === 3 ? 'written-before' : Number(reply) === -1 ? 'late' : writeOutcome(reply)),
  },
  `
if redis.call('exists', KEY.record) == 1 then return 3 end
if pastDeadline(ARG.deadline) then return -1 end
local id = ARG.id
local headBefore = headScore()
local status, holder, score
if ARG.dedupe ~= '' then
  status, holder, score = writeDeduped(id, ARG.dedupe, ARG.kind, ARG.when, ARG.tail)
else
  status = makeRoomFor(id, ARG.replace)
  if status ~= 0 then score = storeJob(id, dueMsOf(ARG.kind, ARG.when), ARG.tail) end
end
if score and (headBefore == nil or score < headBefore) then wake(math.floor(score / SLOTS)) end
recordReply('1')
return status
`,
  [LUA_STORE_JOB, LUA_DEDUPE_WRITE, LUA_WRITE_DEADLINE],
);
