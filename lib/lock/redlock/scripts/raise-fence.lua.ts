import { RedisScript } from '../../../redis/redis-script';

/**
 * Raises a master's fencing counter to a token the quorum handed out (never lowers it).
 *
 * KEYS[1] fencing counter `rl:lock:{name}:fence`; ARGV[1] the token.
 * Returns 1.
 */
export const raiseFenceScript = new RedisScript(
  'raiseFence',
  `
local current = tonumber(redis.call('get', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then redis.call('set', KEYS[1], ARGV[1]) end
return 1
`,
);
