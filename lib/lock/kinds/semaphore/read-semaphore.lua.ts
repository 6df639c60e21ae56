import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_NOW_MS } from '../../protocols/lua-snippets.js';

/**
 * Reads one semaphore as it is now (see LockInspector): its live permits (a permit whose lease
 * ended is free, even before the next acquire purges it).
 *
 * KEYS[1] permits  `<prefix>:sem:{name}`        zset permit owner -> lease deadline (server ms)
 * KEYS[2] fence    `<prefix>:sem:{name}:fence`  fencing counter (the last token handed out)
 * ARGV    none
 *
 * Returns { fence or false, { owner, ms left, ... } } or false when no permit is held.
 */
export const readSemaphoreScript = new RedisScript(
  'readSemaphore',
  `
if redis.call('type', KEYS[1]).ok ~= 'zset' then return false end
local rows = redis.call('zrangebyscore', KEYS[1], '(' .. now, '+inf', 'withscores')
if #rows == 0 then return false end
local permits = {}
for i = 1, #rows, 2 do
  permits[#permits + 1] = rows[i]
  permits[#permits + 1] = tonumber(rows[i + 1]) - now
end
return { redis.call('get', KEYS[2]), permits }
`,
  [LUA_NOW_MS],
);
