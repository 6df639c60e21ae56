import type { LuaSnippet } from '../../core/redis/redis-script.js';

/** Lua: `now` = the Redis server's clock in ms. Lock deadlines never use a client's wall clock. */
export const LUA_NOW_MS: LuaSnippet = {
  name: 'now',
  source: `
local redisTime = redis.call('time')
local now = tonumber(redisTime[1]) * 1000 + math.floor(tonumber(redisTime[2]) / 1000)
`,
};

/** Wake message meaning "every parked waiter may try" (shared locks: all readers can win). */
export const WAKE_ALL = '1000000';

/** The fence snippets are the core's: the delay queue fences job deliveries with the same clock floor. */
export { FENCE_RETENTION_MS, LUA_FENCE } from '../../core/redis/fence-lua-snippets.js';

/**
 * Hash field a waiter sets on a plain or fair lock's owner hash when its try is refused (atomically
 * with the refusal), and a waiter's winning try sets on the hash it creates (others may still wait):
 * "someone may be waiting for this lock". A release that frees the lock publishes the wake-up (and
 * looks up the fair queue's head) only when it finds the mark, so an uncontended cycle sends nothing.
 * A waiter that marks after a release checked cannot miss it: its refused try saw the lock held by
 * the very hash it marked, and a release before that try would have let the try win. Starts with
 * '/', which no owner id does: LockInspector and the read script skip it like a hold record.
 */
export const WAITING_MARK = '/w';

/**
 * Lua: endHold(hash, owner, hold) ends one hold of a reentrant lock's owner (the field `hold` the
 * acquire recorded). Returns -1 when that hold is not there (released before: a re-sent release; or
 * the lock expired or was taken over), the owner's remaining count while it still holds, or 0 once
 * its last hold ended and the owner hash is deleted; and, as a second value, the hash's
 * WAITING_MARK (false when unmarked). Ending only the named hold makes a release that runs twice
 * change nothing the second time, and lets holds of one owner end in any order. The last hold reads
 * what it needs with one HMGET and deletes the hash: two commands.
 */
export const LUA_END_HOLD: LuaSnippet = {
  name: 'endHold',
  source: `
local function endHold(hash, owner, hold)
  local fields = redis.call('hmget', hash, hold, owner, '${WAITING_MARK}')
  if not fields[1] then return -1, false end
  local count = tonumber(fields[2]) or 0
  if count <= 1 then
    redis.call('del', hash)
    return 0, fields[3]
  end
  redis.call('hdel', hash, hold)
  redis.call('hincrby', hash, owner, -1)
  return count - 1, fields[3]
end
`,
};

/**
 * Lua: renewEach(count, renewOne) is the shape of every renewal batch (the watchdog's, or `extend()`
 * as a batch of one): ARGV[1] is the lease in ms, and renewOne(i, lease) renews hold i and says
 * whether it was still held. Returns the list of 1 (renewed) / 0 (no longer held), one per hold.
 */
export const LUA_RENEW_EACH: LuaSnippet = {
  name: 'renewEach',
  source: `
local function renewEach(count, renewOne)
  local lease = tonumber(ARGV[1])
  local result = {}
  for i = 1, count do
    if renewOne(i, lease) then result[i] = 1 else result[i] = 0 end
  end
  return result
end
`,
};
