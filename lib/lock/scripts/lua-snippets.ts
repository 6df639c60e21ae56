/** Lua: `now` = the Redis server's clock in ms. Lock deadlines never use a client's wall clock. */
export const LUA_NOW_MS = `
local redisTime = redis.call('time')
local now = tonumber(redisTime[1]) * 1000 + math.floor(tonumber(redisTime[2]) / 1000)
`;

/** Wake message meaning "every parked waiter may try" (shared locks: all readers can win). */
export const WAKE_ALL = '1000000';
