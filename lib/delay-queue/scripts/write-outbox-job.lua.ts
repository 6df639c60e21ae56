import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_STORE_JOB } from './store-job-lua-snippet.js';
import { LUA_WRITE_DEADLINE } from './write-deadline-lua-snippet.js';

/**
 * Writes the job of one outbox row, fenced (see jobs/write-fence.ts): stores the job and queues it
 * by due time as schedule-jobs.lua.ts does, unless the row was written already or the write is late.
 *
 * KEYS  the five topic keys; KEYS[6] the row's operation record (`op:outbox:<row id>`)
 * ARGV  id, kind ('d' delay from TIME, negative for a row relayed after its due time: the job keeps
 *       that past due time and its place by it | 'a' absolute ms), when, replace ('1'|'0'), body tail
 *       (see job-codec.ts), deadline (ms of this server's clock)
 *
 * Returns 1 stored, 0 an existing job with that id was kept, 2 replaced it, 3 the row was written
 * already (its record exists: an earlier relay of the row, or a first run of this call), -1 the
 * server's clock passed the deadline (nothing written; the row is left to the relay). The record is
 * checked and set in the same step as the write, so a second run, or a late copy of the write from
 * another relay, changes nothing while the record lives.
 */
export const writeOutboxJobScript = new RedisScript(
  'writeOutboxJob',
  `
if redis.call('exists', OPERATION) == 1 then return 3 end
local id, kind, when, replace, tail, deadline = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6]
if pastDeadline(deadline) then return -1 end
local status = makeRoomFor(id, replace)
if status ~= 0 then
  local headBefore = headScore()
  local score = storeJob(id, dueMsOf(kind, when), tail)
  if headBefore == nil or score < headBefore then wake(math.floor(score / SLOTS)) end
end
recordReply('1')
return status
`,
  [LUA_STORE_JOB, LUA_WRITE_DEADLINE],
);
