import { RedisScript } from '../../../redis/redis-script';

/**
 * Releases one level of a Redlock hold on one master, only for its owner; also used to hand back
 * what a failed try won on some masters.
 *
 * KEYS[1] owner hash, KEYS[2] wake channel, KEYS[3] fencing counter
 * ARGV[1] owner id, ARGV[2] wake message, ARGV[3] the counter value this owner's failed try got
 * from this master ('' for an ordinary release)
 *
 * Returns -1 when the owner does not hold it here, the remaining reentry count, or 0 when freed.
 *
 * The wake message is '1:<release id>': WakeSubscriber reads the leading count, and the id lets the
 * fan-out subscriber pass on one copy of a release that every master announces.
 *
 * Undoing the counter: a failed try's increment was never handed out as a token, and while the
 * owner still held the lock here nobody else could increment, so an unchanged value can go back.
 * That keeps the masters' counters level after split votes, which spares the next winner a raise
 * (see fencing-token.ts). A changed value is left alone: someone else moved it on.
 */
export const releaseRedlockScript = new RedisScript(
  'releaseRedlock',
  `
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end
local left = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if left > 0 then return left end
redis.call('del', KEYS[1])
if ARGV[3] ~= '' and redis.call('get', KEYS[3]) == ARGV[3] then redis.call('decr', KEYS[3]) end
redis.call('publish', KEYS[2], ARGV[2])
return 0
`,
);
