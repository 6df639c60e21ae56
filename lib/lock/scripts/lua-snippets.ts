/** Lua: `now` = the Redis server's clock in ms. Lock deadlines never use a client's wall clock. */
export const LUA_NOW_MS = `
local redisTime = redis.call('time')
local now = tonumber(redisTime[1]) * 1000 + math.floor(tonumber(redisTime[2]) / 1000)
`;

/** Wake message meaning "every parked waiter may try" (shared locks: all readers can win). */
export const WAKE_ALL = '1000000';

/**
 * Lua: `nextFence(key)` gives the next fencing token of a lock (a decimal string), `currentFence(key)`
 * the last one handed out. Every fresh grant of every lock kind takes its token from `nextFence`.
 */
export const LUA_FENCE = `
local function nextFence(key)
  return tostring(redis.call('incr', key))
end
local function currentFence(key)
  return redis.call('get', key) or '0'
end
`;
