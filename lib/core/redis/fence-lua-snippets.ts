import type { LuaSnippet } from './redis-script.js';

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
 * Lua: `issueFences(key, floors, lease)` hands out the tokens of a batch of grants under one
 * counter (the delayed-job claim: one token per job claimed, one counter per topic shard): the i-th
 * token is above the one before it and at least `floors[i]` (the job's own last token + 1), and the
 * first is at least max(counter + 1, the Redis server's clock in microseconds), the floor of
 * `nextFence`; the last one is stored back as the counter, kept like `nextFence` keeps it. Returns
 * the tokens as decimal strings. Four commands per batch (GET, TIME, PTTL, SET), none per token.
 * A nil `key` (a caller without a counter) leaves the floors and the clock only.
 */
export const LUA_FENCE_SERIES: LuaSnippet = {
  name: 'fenceSeries',
  requires: [LUA_FENCE],
  source: `
local function issueFences(key, floors, lease)
  local tokens = {}
  if #floors == 0 then return tokens end
  local stored = key and tonumber(redis.call('get', key) or '') or 0
  local last = math.max(stored, clockFloor(false) - 1)
  for i, floor in ipairs(floors) do
    last = math.max(last + 1, floor)
    tokens[i] = string.format('%.0f', last)
  end
  if key then storeFence(key, last, lease) end
  return tokens
end
`,
};
