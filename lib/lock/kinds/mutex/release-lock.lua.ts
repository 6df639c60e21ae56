import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_END_HOLD } from '../../protocols/lua-snippets.js';

/**
 * Releases one hold of a reentrant (plain or fair) lock, only for its owner.
 *
 * KEYS[1] owner hash, KEYS[2] wake channel (a key argument so a cluster routes by its hash tag),
 * KEYS[3] fair queue
 * ARGV[1] owner id, ARGV[2] 'publish' or 'spublish',
 * ARGV[3] the hold id the acquire recorded (acquire-lock ARGV[5]). Only that hold is
 * ended, so a release that runs twice (its reply lost, the command re-sent) finds its hold gone and
 * changes nothing, and holds of one owner may be released in any order.
 *
 * Returns -1 when the caller does not hold the lock (released before, expired, taken over),
 * the remaining reentry count when still held, 0 when freed. On 0, if a waiter marked the hash
 * (WAITING_MARK), it wakes exactly one waiter: the head of the fair queue by name ('@owner') if
 * there is one, else any one ('1'). An unmarked lock nobody waits for is freed with two commands.
 */
export const releaseLockScript = new RedisScript(
  'releaseLock',
  `
local left, awaited = endHold(KEYS[1], ARGV[1], ARGV[3])
if left ~= 0 or not awaited then return left end
local head = redis.call('lindex', KEYS[3], 0)
if head then
  redis.call(ARGV[2], KEYS[2], '@' .. head)
else
  redis.call(ARGV[2], KEYS[2], '1')
end
return 0
`,
  [LUA_END_HOLD],
);
