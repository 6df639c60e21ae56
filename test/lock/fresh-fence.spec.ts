import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { FENCE_RETENTION_MS } from '../../lib/lock/protocols/lua-snippets.js';
import { rawRedis, useLockServicePair } from '../support/test-app.js';

/**
 * The fence of a grant to a lock nobody holds (freshFence, issue 17): the clock floor written with
 * SET … GET, and counter + 1 instead when the counter is ahead of the clock, so a token never repeats
 * nor goes back even then; the counter's retention restarts at the fixed bound.
 */
describe('fencing token of a fresh grant', () => {
  const pair = useLockServicePair('fresh-fence');
  const { a, b } = pair;
  const keys = new RedisKeySpace(pair.keyPrefix);
  const redis = rawRedis();
  afterAll(() => redis.quit());

  it.each([
    ['plain', false],
    ['fair', true],
  ])('%s: a counter ahead of the server clock steps by one, and the next holder steps again', async (name, fair) => {
    const fence = keys.lock(`ahead-${name}`).fence;
    const [seconds] = await redis.time();
    const ahead = (BigInt(seconds) + 100_000n) * 1_000_000n; // a day ahead of the clock, in µs
    await redis.set(fence, ahead.toString());
    const first = await a.acquire(`ahead-${name}`, { fair });
    expect(BigInt(first.fencingToken)).toBe(ahead + 1n);
    await first.release();
    const second = await b.acquire(`ahead-${name}`, { fair });
    expect(BigInt(second.fencingToken)).toBe(ahead + 2n);
    await second.release();
    expect(await redis.get(fence)).toBe((ahead + 2n).toString());
  });

  it('writes the clock floor and a bounded retention, also over a counter a long lease left with a longer TTL', async () => {
    const fence = keys.lock('floor').fence;
    await redis.set(fence, '5', 'PX', 3 * FENCE_RETENTION_MS);
    const [seconds, micros] = await redis.time();
    const lock = await a.acquire('floor', { leaseTime: 1_000 });
    expect(BigInt(lock.fencingToken)).toBeGreaterThanOrEqual(BigInt(seconds) * 1_000_000n + BigInt(micros));
    const ttl = await redis.pttl(fence);
    expect(ttl).toBeGreaterThan(FENCE_RETENTION_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(FENCE_RETENTION_MS);
    await lock.release();
  });
});
