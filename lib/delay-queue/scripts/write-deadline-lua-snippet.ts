import type { LuaSnippet } from '../../core/redis/redis-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * Lua: the deadline of a fenced write (an outbox row's write, see jobs/write-fence.ts), in ms of
 * this server's clock. A write that reaches Redis after it changes nothing: another relay may
 * have claimed the row meanwhile, and only Redis' own clock can tell how late the bytes arrived.
 * An empty or missing deadline is no deadline (an unfenced call).
 */
export const LUA_WRITE_DEADLINE: LuaSnippet = {
  name: 'writeDeadline',
  requires: [LUA_TOPIC_PRELUDE],
  source: `
local function pastDeadline(deadline)
  if deadline == nil or deadline == '' then return false end
  return nowMs > tonumber(deadline)
end
`,
};
