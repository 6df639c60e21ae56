import { mastersReconnected, useRedlockPair } from '../redlock/redlock-test-app.js';
import { sleep } from '../support/timing.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

/**
 * Redlock keeps one fencing counter per master. Every one of them must stay bounded in Redis (a
 * TTL after its last use), including a counter raised to the token of the vote, and a counter lost
 * on every master, or rolled back on a majority, must not restart below the tokens handed out before.
 */
describe('fencing counters on Redlock masters', () => {
  const LEASE = 3_000;
  // A healthy master answering late on a loaded machine must not count as down (see master-failures).
  const { masters, pair } = useRedlockPair({ lock: { leaseTime: LEASE }, redlock: { requestTimeout: 1_500 } });

  const fenceKey = (name: string) => new RedisKeySpace(pair.keyPrefix).lock(name).fence;
  const ttls = (name: string) => Promise.all([0, 1, 2].map((i) => masters.raw(i).pttl(fenceKey(name))));

  async function token(name: string): Promise<bigint> {
    const lock = await pair.a.acquire(name, { waitTimeout: 10_000 });
    await lock.release();
    return BigInt(lock.fencingToken);
  }

  it('gives the counter a bounded TTL on every master, also on a master raised to the vote token', async () => {
    await token('raised');
    // One master far ahead, and with another one down it is in the vote: the token comes from it
    // and the lagging master is raised to it before it is handed out.
    const ahead = BigInt((await masters.raw(0).get(fenceKey('raised')))!) + 1_000_000n;
    await masters.raw(0).set(fenceKey('raised'), ahead.toString(), 'PX', 3_600_000);
    await masters.kill(2);
    try {
      expect(await token('raised')).toBeGreaterThan(ahead);
      expect(BigInt((await masters.raw(1).get(fenceKey('raised')))!)).toBeGreaterThan(ahead);
    } finally {
      await masters.start(2);
      await mastersReconnected(pair.apps);
    }
    for (const ttl of await ttls('raised')) {
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(Math.max(3_600_000, 2 * LEASE));
    }
  });

  it('hands out a larger token after the counter is lost on every master', async () => {
    const before = [await token('lost'), await token('lost')];
    const [grantSecond] = await masters.raw(0).time();
    for (const i of [0, 1, 2]) await masters.raw(i).del(fenceKey('lost'));
    // A Redlock counter restarts at the clock in whole seconds (so the masters start alike): the
    // guarantee holds from the next second of the Redis clock on.
    while ((await masters.raw(0).time())[0] === grantSecond) await sleep(50);
    expect(await token('lost')).toBeGreaterThan(before[1]);
  });

  it('hands out a larger token after the counter went back on a majority of masters (AOF everysec lost its last second)', async () => {
    const before = [await token('rolled-back'), await token('rolled-back'), await token('rolled-back')];
    const [grantSecond] = await masters.raw(0).time();
    // Masters 1 and 2 came back with the counter of the first grant only; master 0, the only one
    // that knows the last tokens, is down, so the vote is theirs alone.
    for (const i of [1, 2]) await masters.raw(i).set(fenceKey('rolled-back'), before[0].toString(), 'PX', 3_600_000);
    await masters.kill(0);
    try {
      // The counter-mode floor is the clock in whole seconds: it covers grants of earlier seconds.
      while ((await masters.raw(1).time())[0] === grantSecond) await sleep(50);
      const after = await token('rolled-back');
      expect(after).toBeGreaterThan(before[2]);
    } finally {
      await masters.start(0);
      await mastersReconnected(pair.apps);
    }
  });
});
