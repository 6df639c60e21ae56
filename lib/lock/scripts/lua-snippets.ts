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

/**
 * How long a fencing counter outlives its last grant at least (ms): the counter of a name nobody
 * locks any more goes away, so Redis memory is bounded by the names used within this window.
 */
export const FENCE_RETENTION_MS = 3_600_000;

/**
 * Lua helpers for fencing tokens. A token is a decimal string of an integer below 2^53: exact in
 * Lua's doubles (`string.format('%.0f')` prints it without rounding) and far inside a signed 64-bit
 * column. Today's tokens are about 1.8e15 (µs since 1970); the clock floor reaches 2^53 ≈ 9.007e15
 * in the year 2255 (2^53 µs ≈ 285 years), and only more than one fresh grant per µs sustained on one
 * key would make the counter outrun it.
 *
 * - `nextFence(key, lease, counterOnly)`: the token of a fresh grant, stored back as the counter.
 *   It is max(counter + 1, the Redis server's clock in microseconds), so a counter that was lost
 *   (expiry, FLUSHALL, a restart without persistence, eviction) or rolled back (failover to a replica
 *   that missed the last grants) still starts above every token handed out before, as long as the
 *   Redis server's clock does not go back. `counterOnly` (Redlock masters, whose counters must move
 *   together) uses the clock in whole seconds (as microseconds) for the floor: masters asked at once
 *   agree on it (the counters move together: counter + 1 within a second, the same floor when a new
 *   second starts), and a counter lost or rolled back on a majority of masters still starts above
 *   every token of an earlier second (fewer than a million grants a second on one key).
 * - `freshFence(key, lease, counterOnly)`: the same token as `nextFence`, for a grant to a lock
 *   nobody holds (plain and fair locks: the owner hash was absent). Nobody else's lease needs the
 *   counter then, so its retention restarts at max(FENCE_RETENTION_MS, 2 x lease) without reading
 *   the old TTL, and the clock floor is written with SET … GET, which reads the old counter in the
 *   same command: two commands (TIME, SET) instead of four on the hot path; only when the counter
 *   is at or above the clock (more than one grant per microsecond, or a clock that went back) a
 *   second SET writes counter + 1 instead, inside the same script, so nothing ever sees the lower value.
 * - `currentFence(key, lease, counterOnly)`: the last token, for a re-entry or a shared hold (a reader
 *   joining a read phase); if the counter is gone, a new token from `nextFence` (never '0', never
 *   lower than one handed out before).
 * - `raiseFence(key, token)`: sets the counter to `token` if that is higher (never lowers it).
 *
 * Each keeps the counter for max(FENCE_RETENTION_MS, 2 x lease) after it was last used, never less
 * than it already had while another holder may still use it (`freshFence` runs when none can): a
 * counter lives while its lock is in use and some time after, then expires.
 */
export const LUA_FENCE: LuaSnippet = {
  name: 'fence',
  source: `
local function fenceTtl(key, lease)
  return string.format('%.0f', math.max(${FENCE_RETENTION_MS}, 2 * (tonumber(lease) or 0), redis.call('pttl', key)))
end
local function storeFence(key, token, lease)
  local text = string.format('%.0f', token)
  redis.call('set', key, text, 'px', fenceTtl(key, lease))
  return text
end
local function clockFloor(counterOnly)
  local clock = redis.call('time')
  if counterOnly then return tonumber(clock[1]) * 1000000 end
  return tonumber(clock[1]) * 1000000 + tonumber(clock[2])
end
local function nextFence(key, lease, counterOnly)
  local stored = tonumber(redis.call('get', key) or '')
  return storeFence(key, math.max((stored or 0) + 1, clockFloor(counterOnly)), lease)
end
local function freshFence(key, lease, counterOnly)
  local ttl = string.format('%.0f', math.max(${FENCE_RETENTION_MS}, 2 * (tonumber(lease) or 0)))
  if counterOnly then
    local stored = tonumber(redis.call('get', key) or '')
    local text = string.format('%.0f', math.max((stored or 0) + 1, clockFloor(true)))
    redis.call('set', key, text, 'px', ttl)
    return text
  end
  local clock = redis.call('time')
  local floor = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  local text = string.format('%.0f', floor)
  local stored = tonumber(redis.call('set', key, text, 'px', ttl, 'get') or '')
  if stored and stored >= floor then
    text = string.format('%.0f', stored + 1)
    redis.call('set', key, text, 'px', ttl)
  end
  return text
end
local function currentFence(key, lease, counterOnly)
  local value = redis.call('get', key)
  if not value then return nextFence(key, lease, counterOnly) end
  redis.call('pexpire', key, fenceTtl(key, lease))
  return value
end
local function raiseFence(key, token)
  local stored = tonumber(redis.call('get', key) or '')
  if stored and stored >= tonumber(token) then return end
  storeFence(key, tonumber(token), 0)
end
`,
};

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
