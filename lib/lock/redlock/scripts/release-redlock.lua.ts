import { RedisScript } from '../../../core/redis/redis-script.js';
import { LUA_END_HOLD } from '../../protocols/lua-snippets.js';

/**
 * Releases one level of a Redlock hold on one master, only for its owner; also hands back what a
 * failed try won on some masters (every try has its own ids, so that can only undo that try).
 *
 * KEYS[1] owner hash, KEYS[2] wake channel
 * ARGV[1] owner id, ARGV[2] wake message, ARGV[3] the hold id the acquire recorded (acquire-lock
 * ARGV[5]). Only that hold is ended, as in release-lock: a release that runs twice (its reply lost,
 * the command re-sent) finds its hold gone and changes nothing.
 *
 * Returns -1 when the hold is not here (released before, expired, never granted here), the
 * remaining reentry count, or 0 when freed.
 *
 * The wake message is '1:<release id>': WakeSubscriber reads the leading count, and the id lets the
 * fan-out subscriber pass on one copy of a release that every master announces.
 *
 * The fencing counter is never touched: a fence only grows, and a step a failed try took is
 * just a token nobody was given.
 */
export const releaseRedlockScript = new RedisScript(
  'releaseRedlock',
  `
local left = endHold(KEYS[1], ARGV[1], ARGV[3])
if left ~= 0 then return left end
redis.call('publish', KEYS[2], ARGV[2])
return 0
`,
  [LUA_END_HOLD],
);
