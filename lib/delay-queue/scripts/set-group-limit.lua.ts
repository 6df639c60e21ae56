import { RedisScript } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Sets how many jobs of one group may run at once on a topic shard (`groupConcurrency`). A raised
 * limit gives a turn at once to every group that was held at the old one (those have jobs out, so
 * they are all in GROUPS_OUT); a lowered one is applied by the claim, which skips a group at its limit.
 *
 * KEYS  the five topic keys (see lua-snippets.ts)
 * ARGV[1] the limit (>= 1)
 *
 * Returns the previous limit. Running it twice sets the same limit and changes nothing more.
 */
export const setGroupLimitScript = new RedisScript(
  'setGroupLimit',
  `
local previous = groupLimit()
local limit = tonumber(ARGV[1])
if limit == 1 then redis.call('del', GROUP_LIMIT) else redis.call('set', GROUP_LIMIT, limit) end
cachedGroupLimit = limit
if limit > previous then
  local out = redis.call('hgetall', GROUPS_OUT)
  for i = 1, #out, 2 do refreshGroup(out[i], nil) end
  local head = headScore()
  if head then wake(math.floor(head / SLOTS)) end
end
return previous
`,
  [LUA_TOPIC_PRELUDE],
);
