import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_NOW_MS } from '../../protocols/lua-snippets.js';

/**
 * Reads one lock (reentrant, fair or read/write) as it is now, from one snapshot (see LockInspector).
 *
 * KEYS[1] owner hash  `<prefix>:lock:{name}`          owner -> reentry count ('mode' field for read/write),
 *                                                      and `<owner>/<n>` per open hold (not returned: the count says it)
 * KEYS[2] fence       `<prefix>:lock:{name}:fence`    fencing counter
 * KEYS[3] fair queue  `<prefix>:lock:{name}:queue`    list of waiting owners
 * KEYS[4] leases      `<prefix>:lock:{name}:leases`   read/write: holder field -> lease deadline
 * ARGV    none
 *
 * Returns { pttl of the hash, fence or false, waiters in the fair queue, { field, value, ... },
 * { holder field, ms left, ... } } or false when the lock is not held.
 */
export const readLockScript = new RedisScript(
  'readLock',
  `
if redis.call('type', KEYS[1]).ok ~= 'hash' then return false end
local leases = {}
if redis.call('type', KEYS[4]).ok == 'zset' then
  local rows = redis.call('zrange', KEYS[4], 0, -1, 'withscores')
  for i = 1, #rows, 2 do
    leases[#leases + 1] = rows[i]
    leases[#leases + 1] = math.max(0, tonumber(rows[i + 1]) - now)
  end
end
local waiting = 0
if redis.call('type', KEYS[3]).ok == 'list' then waiting = redis.call('llen', KEYS[3]) end
local fields = {}
local all = redis.call('hgetall', KEYS[1])
for i = 1, #all, 2 do
  if not string.find(all[i], '/', 1, true) then
    fields[#fields + 1] = all[i]
    fields[#fields + 1] = all[i + 1]
  end
end
return { redis.call('pttl', KEYS[1]), redis.call('get', KEYS[2]), waiting, fields, leases }
`,
  [LUA_NOW_MS],
);
