import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_REPEAT } from './repeat-lua-snippets.js';
import { LUA_WRITE_DEADLINE } from './write-deadline-lua-snippet.js';

/**
 * Deletes a repeatable schedule (`removeRepeat()`) and its tick job if it still waits, and records
 * the removal (also of a schedule not stored: one lost with the data stays removed); a tick already
 * running finishes, and its advance finds no schedule and enqueues nothing.
 *
 * KEYS  see repeat-lua-snippets.ts; KEYS[6] the call's operation record
 * ARGV[1] schedule id, ARGV[2] (optional, an outbox row's application, see jobs/write-fence.ts)
 *         the write's deadline on this server's clock; KEYS[6] is then the row's record
 *
 * Returns 1 if the schedule existed, 0 if not, -3 the deadline has passed (nothing changes, nothing
 * recorded); a second run of the same call answers as the first.
 */
export const removeRepeatScript = new RedisScript(
  'removeRepeat',
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
if pastDeadline(ARGV[2]) then return -3 end
local id = ARGV[1]
local tick = redis.call('zscore', REPEAT_NEXT, id)
local existed = redis.call('hdel', REPEATS, id)
redis.call('zrem', REPEAT_NEXT, id)
redis.call('zrem', REPEAT_LAST, id)
recordRemoval(id)
if tick then dropWaitingTick(tickJobId(id, tonumber(tick))) end
recordReply(existed)
return existed
`,
  [LUA_REPEAT, LUA_WRITE_DEADLINE],
);
