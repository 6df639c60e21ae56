import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Sets how many jobs of one group may run at once on a topic shard (`groupConcurrency`). A raised
 * limit gives a turn at once to every group that was held at the old one (those have jobs out, so
 * they are all in GROUPS_OUT); a lowered one is applied by the claim, which skips a group at its limit.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys (the limit's own key is named from
 * the shard's prefix with the other group bookkeeping keys, see group-lua-snippet.ts); the limit (>= 1).
 *
 * Returns the previous limit (decoded as `previousLimit`). Running it twice sets the same limit and
 * changes nothing more.
 */
export const setGroupLimitScript = new JobScript(
  'setGroupLimit',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker'],
    args: { limit: 'int' },
    decode: (reply) => ({ previousLimit: Number(reply) }),
  },
  `
local previous = groupLimit()
local limit = ARG.limit
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
