import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_FENCE } from '../../protocols/lua-snippets.js';

/**
 * Raises a master's fencing counter to a token the quorum handed out (never lowers it); the counter
 * keeps the bounded TTL every fence has (LUA_FENCE).
 *
 * KEYS[1] fencing counter `rl:lock:{name}:fence`; ARGV[1] the token.
 * Returns 1.
 */
export const raiseFenceScript = new RedisScript(
  'raiseFence',
  `
raiseFence(KEYS[1], ARGV[1])
return 1
`,
  [LUA_FENCE],
);
