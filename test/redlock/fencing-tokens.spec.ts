import { strictlyIncreasing, mastersReconnected, useRedlockPair } from './redlock-test-app.js';
import { holdsWithin, waitFor } from '../support/timing.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

/**
 * Fencing tokens must grow across holders whatever minority is down, including the first master
 * (which a "designated counter" scheme would depend on), and after the counters of the masters
 * have drifted apart.
 */
describe('Redlock: fencing tokens', () => {
  const { masters, pair } = useRedlockPair({ lock: { leaseTime: 3_000 }, redlock: { requestTimeout: 300 } });

  /** Takes and releases `key` `times` times, alternating services; returns the tokens. */
  async function takeTurns(key: string, times: number): Promise<bigint[]> {
    const tokens: bigint[] = [];
    for (let i = 0; i < times; i++) {
      const lock = await (i % 2 === 0 ? pair.a : pair.b).acquire(key, { waitTimeout: 20_000 });
      tokens.push(BigInt(lock.fencingToken));
      await lock.release();
    }
    return tokens;
  }

  it('stay strictly increasing while each master in turn is down (first master included)', async () => {
    const tokens = await takeTurns('rotate', 3);
    // m1 counts alone with m2, then alone with m3, then m2 and m3 decide without it: a counter
    // known to one master only would repeat tokens here.
    for (const down of [2, 1, 0]) {
      await masters.kill(down);
      try {
        tokens.push(...(await takeTurns('rotate', 4)));
      } finally {
        await masters.start(down);
        await mastersReconnected(pair.apps);
      }
    }
    expect(tokens).toHaveLength(15);
    expect(strictlyIncreasing(tokens)).toBe(true);
  });

  it('raise lagging masters to a token before handing it out, so the next majority sees it', async () => {
    const key = new RedisKeySpace(pair.keyPrefix).lock('ahead').fence;
    const [first] = await takeTurns('ahead', 1);
    // One master's counter is far ahead of the others (it alone saw a burst of tries), and with a
    // second master down the vote must include it: the token comes from it...
    const counters = await Promise.all([0, 1, 2].map(async (i) => BigInt((await masters.raw(i).get(key)) ?? '0')));
    const ahead = counters.reduce((a, b) => (a > b ? a : b)) + 1_000_000n;
    await masters.raw(0).set(key, ahead.toString(), 'KEEPTTL');
    await masters.kill(2);
    let jumped: bigint;
    try {
      [jumped] = await takeTurns('ahead', 1);
      expect(jumped).toBeGreaterThan(ahead);
      expect(jumped).toBeGreaterThan(first);
      // ...and was written to the lagging master before it was handed out,
      expect(BigInt((await masters.raw(1).get(key)) ?? '0')).toBeGreaterThanOrEqual(jumped);
    } finally {
      await masters.start(2);
      await mastersReconnected(pair.apps);
    }
    // so a majority without the master it came from still hands out a larger one.
    await masters.kill(0);
    try {
      const [after] = await takeTurns('ahead', 1);
      expect(after).toBeGreaterThan(jumped);
    } finally {
      await masters.start(0);
      await mastersReconnected(pair.apps);
    }
  });

  it('hands back a minority grant of a lost vote and never lowers the counter it stepped', async () => {
    const owners = new RedisKeySpace(pair.keyPrefix).lock('level').owners;
    const fence = `${owners}:fence`;
    const listedOnAll = async (listed: boolean) =>
      (await Promise.all([0, 1, 2].map((i) => masters.raw(i).exists(owners)))).every((n) => (n === 1) === listed);
    await takeTurns('level', 2);
    // A release resolves once a majority answered and lands on the third master after: the holder
    // below must be granted on all three, or deleting its entry from one would leave it a minority.
    await waitFor(() => listedOnAll(false), 5_000, 'the last release on every master');
    const holder = await pair.a.acquire('level');
    // Its grant on the slowest master may likewise land after the vote.
    await waitFor(() => listedOnAll(true), 5_000, 'the holder on every master');
    // The holder's entry vanishes from one master: a competing try wins that one and loses the vote.
    await masters.raw(2).del(owners);
    const before = await masters.raw(2).get(fence);
    expect(await pair.b.tryAcquire('level')).toBeNull();
    // The competing try ran on master 2 (its counter moved) and its grant was handed back; the
    // step it took stays: a fence only grows (a skipped token is harmless).
    const steppedAndHandedBack = async () =>
      BigInt((await masters.raw(2).get(fence)) ?? '0') > BigInt(before ?? '0') && (await masters.raw(2).exists(owners)) === 0;
    await holdsWithin(steppedAndHandedBack, 5_000);
    expect(await steppedAndHandedBack()).toBe(true);
    await holder.release();
    // Counters apart: the next token comes from the highest of them (raised on the others).
    const [next] = await takeTurns('level', 1);
    expect(next).toBeGreaterThan(BigInt(holder.fencingToken));
  });
});
