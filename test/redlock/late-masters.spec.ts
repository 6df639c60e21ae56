import type { Redis } from 'ioredis';
import { fencedWrite } from '../fixtures/fenced-store';
import { startIndependentMasters, type IndependentMasters } from '../support/independent-masters';
import { rawRedis, uniquePrefix } from '../support/test-app';
import { createRedlockPair, mastersReconnected } from './redlock-test-app';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it holds or `timeoutMs` passes; resolves whether it held. */
async function eventually(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (performance.now() > deadline) return false;
    await sleep(25);
  }
}

/**
 * Redlock with masters that answer late: a master whose answer arrives after the vote was decided
 * must never make two holders, repeat a fencing token, or leave a hold behind.
 */
describe('Redlock: masters that answer late', () => {
  let masters: IndependentMasters;
  let store: Redis;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    masters = await startIndependentMasters(3);
    store = rawRedis();
  });
  afterAll(async () => {
    store?.disconnect();
    await masters?.stop();
    process.off('unhandledRejection', onUnhandled);
  });
  afterEach(() => expect(unhandled).toEqual([]));

  const ownersKey = (keyPrefix: string, name: string) => `${keyPrefix}:lock:{${name}}`;
  const heldOn = async (key: string) => Promise.all([0, 1, 2].map(async (i) => (await masters.raw(i).exists(key)) === 1));

  describe('killed and paused masters (direct connections)', () => {
    let pair: Awaited<ReturnType<typeof createRedlockPair>>;
    beforeAll(async () => {
      // Tries follow each other at once (no retry delay, no jitter), so one is always in flight.
      pair = await createRedlockPair(masters.urls, {
        lock: { leaseTime: 5_000 },
        redlock: { requestTimeout: 200, retryDelay: 1, retryJitter: 0 },
      });
    });
    afterAll(() => pair?.close());

    it('does not count a later try of one acquire as a replay of an earlier try that a paused master answered late', async () => {
      const name = 'late-replay';
      const fenced = `${uniquePrefix('fenced')}:${name}`;
      // Master 0 is down and master 2 pauses: every try of the acquire fails on master 0, wins
      // master 1, and queues on master 2 behind the earlier tries, whose grants arrive too late.
      await masters.kill(0);
      const holder = await (async () => {
        try {
          await masters.raw(2).call('CLIENT', 'PAUSE', '700', 'WRITE');
          return await pair.a.acquire(name, { waitTimeout: 15_000 });
        } finally {
          await masters.start(0);
          await mastersReconnected(pair.apps);
        }
      })();
      const holderToken = holder.fencingToken;
      expect(await fencedWrite(store, fenced, holderToken, 'a')).toBe(true);

      // While the holder holds, the other service never gets the lock (tokens of any grant it got).
      const grantedWhileHeld: string[] = [];
      for (let i = 0; i < 10; i++) {
        const other = await pair.b.tryAcquire(name);
        if (other) {
          grantedWhileHeld.push(other.fencingToken);
          await other.release();
        }
        await sleep(50);
      }
      expect(holder.held).toBe(true);
      expect({ holderToken, grantedWhileHeld }).toEqual({ holderToken, grantedWhileHeld: [] });

      await holder.release();
      const next = await pair.b.acquire(name, { waitTimeout: 10_000 });
      expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(holderToken));
      expect(await fencedWrite(store, fenced, next.fencingToken, 'b')).toBe(true);
      await next.release();
      // No hold left behind on any master, also from the late grants handed back.
      expect(await eventually(async () => (await heldOn(ownersKey(pair.keyPrefix, name))).every((held) => !held))).toBe(true);
    });
  });
});
