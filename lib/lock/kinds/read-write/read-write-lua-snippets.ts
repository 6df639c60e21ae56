import type { LuaSnippet } from '../../../core/redis/redis-script.js';
import { LUA_FENCE, LUA_NOW_MS } from '../../protocols/lua-snippets.js';

/*
 * Read/write lock layout (one hash tag):
 *   hash  rl:lock:{name}          'mode' -> 'read' | 'write'; holder '<owner>:r' / '<owner>:w' -> number of holds
 *   zset  rl:lock:{name}:leases   hold '<holder>#<hold id>' -> lease deadline (server ms), one per acquire call
 *   zset  rl:lock:{name}:writers  waiting writer -> liveness deadline; while any is live, new readers wait
 * Each hold (the outer one and every nested one of a lock section) has its own member and deadline:
 *  - an acquire, release or renewal that runs twice (a reply lost, the command re-sent) finds its
 *    own hold already there or already gone and changes nothing the second time;
 *  - a hold's renewal or a nested hold's short lease never shortens another hold of the same owner;
 *  - a crashed reader's hold ends at its own deadline even while other readers keep renewing theirs.
 * A holder field counts its live holds; the hash TTL is the longest lease granted, a backstop only.
 * A hash without 'mode' is an exclusive lock's owner hash: the read/write scripts refuse it ({-2, 0}).
 */

/** Lua: the holder field a hold member belongs to. */
export const LUA_HOLDER_OF: LuaSnippet = {
  name: 'holderOf',
  source: `
local function holderOf(member)
  return string.match(member, '^([^#]*)#')
end
`,
};

/**
 * Lua: purgeExpired(hash, leases) drops the holds whose lease ended (and holders left without
 * holds), keeps 'mode' right, and deletes both keys when no hold is left.
 */
export const LUA_PURGE_EXPIRED: LuaSnippet = {
  name: 'purgeExpired',
  requires: [LUA_NOW_MS, LUA_HOLDER_OF],
  source: `
local function purgeExpired(hash, leases)
  local expired = redis.call('zrangebyscore', leases, '-inf', now)
  if #expired == 0 then return end
  for _, member in ipairs(expired) do
    redis.call('zrem', leases, member)
    local holder = holderOf(member)
    if holder and redis.call('hexists', hash, holder) == 1 and redis.call('hincrby', hash, holder, -1) <= 0 then
      redis.call('hdel', hash, holder)
    end
  end
  if redis.call('zcard', leases) == 0 then
    redis.call('del', hash, leases)
  elseif redis.call('hget', hash, 'mode') == 'write' then
    local writer = false
    for _, f in ipairs(redis.call('hkeys', hash)) do
      if string.sub(f, -2) == ':w' then writer = true end
    end
    if not writer then redis.call('hset', hash, 'mode', 'read') end
  end
end
`,
};

/**
 * Lua for the acquire scripts (KEYS[1] hash, KEYS[2] leases, KEYS[3] waiting writers, KEYS[4] fence,
 * ARGV[1] owner, ARGV[2] lease ms):
 * - openAcquire(side, holdId, nested) answers every case the read and the write side answer alike,
 *   after purging ended holds and writers: a name an exclusive lock holds ({-2, 0}: one name is one
 *   kind of lock), a nested acquire whose section holds neither side any more ({0, -3}), a free lock
 *   (takeFree), and this very attempt run before (its reply lost: the hold is there, {1, token}).
 *   Returns the owner's holder field of that side ('r' or 'w'), the hold's member, the mode, the
 *   lease, and that answer (nil when the lock is held and the script decides);
 * - takeFree(side, holder, member, lease) takes the free lock on that side with a first hold (a reader
 *   waits instead while a writer waits: writer preference; a writer stops waiting);
 * - hold(holder, member, lease) records a new hold of the holder field, changing no other hold's
 *   lease or count;
 * - waitTime() is how long a refused caller may sleep at most (until the first lease or, on a free
 *   lock held back for a waiting writer, that writer's liveness deadline could end).
 */
export const LUA_READ_WRITE_ACQUIRE: LuaSnippet = {
  name: 'readWriteAcquire',
  requires: [LUA_NOW_MS, LUA_HOLDER_OF, LUA_PURGE_EXPIRED, LUA_FENCE],
  source: `
local function hold(holder, member, lease)
  redis.call('hincrby', KEYS[1], holder, 1)
  redis.call('zadd', KEYS[2], now + lease, member)
  if redis.call('pttl', KEYS[1]) < lease then redis.call('pexpire', KEYS[1], lease) end
  redis.call('pexpire', KEYS[2], math.max(redis.call('pttl', KEYS[1]), lease))
end
local function firstDeadline(key)
  local first = redis.call('zrange', key, 0, 0, 'WITHSCORES')
  if first[2] then return math.max(1, tonumber(first[2]) - now) end
  return false
end
local function waitTime()
  return firstDeadline(KEYS[2]) or firstDeadline(KEYS[3]) or 1
end
-- A nested acquire's section still holds a side (or this very attempt ran before: a re-send).
local function sectionHolds(owner, member)
  return redis.call('hexists', KEYS[1], owner .. ':r') == 1 or redis.call('hexists', KEYS[1], owner .. ':w') == 1
    or redis.call('zscore', KEYS[2], member) ~= false
end
local function purgeAll()
  purgeExpired(KEYS[1], KEYS[2])
  redis.call('zremrangebyscore', KEYS[3], '-inf', now)
end
local function takeFree(side, holder, member, lease)
  if side == 'r' and redis.call('zcard', KEYS[3]) > 0 then return {0, waitTime()} end
  redis.call('del', KEYS[2])
  redis.call('hset', KEYS[1], 'mode', side == 'r' and 'read' or 'write')
  hold(holder, member, lease)
  if side == 'w' then redis.call('zrem', KEYS[3], ARGV[1]) end
  return {1, nextFence(KEYS[4], lease)}
end
local function openAcquire(side, holdId, nested)
  purgeAll()
  local lease = tonumber(ARGV[2])
  local holder = ARGV[1] .. ':' .. side
  local member = holder .. '#' .. holdId
  local mode = redis.call('hget', KEYS[1], 'mode')
  if not mode and redis.call('exists', KEYS[1]) == 1 then return holder, member, mode, lease, {-2, 0} end
  if nested and not sectionHolds(ARGV[1], member) then return holder, member, mode, lease, {0, -3} end
  if not mode then return holder, member, mode, lease, takeFree(side, holder, member, lease) end
  -- this very attempt ran before (its reply was lost): the hold is there
  if redis.call('zscore', KEYS[2], member) then return holder, member, mode, lease, {1, currentFence(KEYS[4], lease)} end
  return holder, member, mode, lease, nil
end
`,
};
