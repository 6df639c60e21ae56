import { RedisScript } from '../../../core/redis/redis-script.js';

/**
 * Removes a waiter that gives up (timeout, abort) from a fair lock's queue, and tells the new head
 * if the lock is free, so a departing waiter never leaves the queue stalled.
 *
 * KEYS[1] owner hash, KEYS[2] queue, KEYS[3] timeouts, KEYS[4] wake channel
 * ARGV[1] owner, ARGV[2] 'publish' or 'spublish'
 *
 * Returns 1 (also when the owner was not waiting: leaving twice changes nothing).
 */
export const leaveFairQueueScript = new RedisScript(
  'leaveFairQueue',
  `
local wasHead = redis.call('lindex', KEYS[2], 0) == ARGV[1]
redis.call('lrem', KEYS[2], 0, ARGV[1])
redis.call('zrem', KEYS[3], ARGV[1])
if wasHead and redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head then redis.call(ARGV[2], KEYS[4], '@' .. head) end
end
return 1
`,
);
