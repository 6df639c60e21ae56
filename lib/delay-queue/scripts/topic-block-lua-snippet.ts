import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_BASE } from './topic-base-lua-snippet.js';

/**
 * Lua: a topic shard's block (`JobRateLimitedError`): while `<shard>:blocked` holds a server ms later
 * than now, claims take nothing from the shard and wake its consumers when it ends (the claim treats
 * it as the rate limit's next free moment, claim-steps-lua-snippets.ts). The key expires at that
 * moment (PX), so a block never outlives its end. A block only ever grows: setting one that ends
 * earlier than the current one changes nothing, so the last of several rate-limited jobs does not
 * shorten what an earlier one asked for, and setting the same end twice is a no-op.
 */
export const LUA_TOPIC_BLOCK: LuaSnippet = {
  name: 'topicBlock',
  requires: [LUA_TOPIC_BASE],
  source: `
-- The server ms the shard's block ends, or -1 when it is not blocked.
local function blockEndOf(blockedKey)
  local untilMs = tonumber(redis.call('get', blockedKey))
  if untilMs and untilMs > nowMs then return untilMs end
  return -1
end

-- Blocks the shard's claims until untilMs (server ms), unless a block ending later is in place.
-- Returns the block's end.
local function blockUntil(blockedKey, untilMs)
  local current = blockEndOf(blockedKey)
  if current >= untilMs or untilMs <= nowMs then return current end
  redis.call('set', blockedKey, fmt(untilMs), 'px', fmt(untilMs - nowMs))
  return untilMs
end
`,
};
