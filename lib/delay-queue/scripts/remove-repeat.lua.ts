import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_REPEAT } from './repeat-lua-snippets.js';

/**
 * Deletes a repeatable schedule (`removeRepeat()`) and its tick job if it still waits; a tick
 * already running finishes, and its advance finds no schedule and enqueues nothing.
 *
 * KEYS  see repeat-lua-snippets.ts; KEYS[6] the call's operation record
 * ARGV[1] schedule id
 *
 * Returns 1 if the schedule existed, 0 if not; a second run of the same call answers as the first.
 */
export const removeRepeatScript = new RedisScript(
  'removeRepeat',
  `
local prior = recordedReply()
if prior then return tonumber(prior) end
local id = ARGV[1]
local tick = redis.call('zscore', REPEAT_NEXT, id)
local existed = redis.call('hdel', REPEATS, id)
redis.call('zrem', REPEAT_NEXT, id)
redis.call('zrem', REPEAT_LAST, id)
if tick then dropWaitingTick(tickJobId(id, tonumber(tick))) end
recordReply(existed)
return existed
`,
  [LUA_REPEAT],
);
