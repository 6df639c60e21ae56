import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_FENCE, LUA_NOW_MS } from '../../protocols/lua-snippets.js';

/**
 * Takes a permit of a semaphore with expiring permits. Layout (one hash tag):
 *   zset  rl:sem:{name}         permit owner -> lease deadline (server ms)
 *   hash  rl:sem:{name}:grants  permit owner -> the fencing token its grant got
 * A permit whose deadline passed is free again (purged here), so a crashed holder never leaks one.
 * Every acquire call has its own owner id, so an acquire that runs twice (a lost reply, the command
 * re-sent) finds its own permit and answers with the token recorded at the grant: it never takes a
 * second permit nor reports "full" for the permit it holds.
 *
 * KEYS[1] permits zset, KEYS[2] fence, KEYS[3] grants
 * ARGV[1] owner, ARGV[2] lease ms, ARGV[3] permit count
 *
 * Returns {1, fencingToken} or {0, ms until the earliest permit lease ends}.
 */
export const acquirePermitScript = new RedisScript(
  'acquirePermit',
  `
local lease = tonumber(ARGV[2])
local expired = redis.call('zrangebyscore', KEYS[1], '-inf', now)
for _, owner in ipairs(expired) do
  redis.call('zrem', KEYS[1], owner)
  redis.call('hdel', KEYS[3], owner)
end
if redis.call('zscore', KEYS[1], ARGV[1]) then
  -- this very attempt ran before (its reply was lost): the permit is already ours
  return {1, redis.call('hget', KEYS[3], ARGV[1]) or currentFence(KEYS[2], lease)}
end
if redis.call('zcard', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('zadd', KEYS[1], now + lease, ARGV[1])
  if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], lease) end
  local token = nextFence(KEYS[2], lease)
  redis.call('hset', KEYS[3], ARGV[1], token)
  if redis.call('pttl', KEYS[3]) < lease then redis.call('pexpire', KEYS[3], lease) end
  return {1, token}
end
local first = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')
return {0, math.max(1, tonumber(first[2]) - now)}
`,
  [LUA_NOW_MS, LUA_FENCE],
);
