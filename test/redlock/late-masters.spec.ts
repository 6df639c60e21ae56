import type { TestingModule } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { LockService, type LockHandle } from '../../lib/index.js';
import { RedlockMasters } from '../../lib/lock/redlock/redlock-masters.js';
import { releaseRedlockScript } from '../../lib/lock/redlock/scripts/release-redlock.lua.js';
import { acquireLockScript } from '../../lib/lock/kinds/mutex/acquire-lock.lua.js';
import { renewLocksScript } from '../../lib/lock/kinds/mutex/renew-locks.lua.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { fencedWrite } from '../fixtures/fenced-store.js';
import { startIndependentMasters, type IndependentMasters } from '../support/independent-masters.js';
import { rawRedis, uniquePrefix } from '../support/test-app.js';
import { abortReason, holdsWithin, sleep } from '../support/timing.js';
import { createRedlockApp, createRedlockPair, mastersReconnected, strictlyIncreasing, useRedlockPairOn } from './redlock-test-app.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

failOnUnhandledRejections({ after: 'each' });

/**
 * Redlock with masters that answer late: a master whose answer arrives after the vote was decided
 * must never make two holders, repeat a fencing token, or leave a hold behind.
 */
describe('Redlock: masters that answer late', () => {
  let masters: IndependentMasters;
  let store: Redis;

  beforeAll(async () => {
    masters = await startIndependentMasters(3);
    store = rawRedis();
  });
  afterAll(async () => {
    store?.disconnect();
    await masters?.stop();
  });

  const ownersKey = (keyPrefix: string, name: string) => new RedisKeySpace(keyPrefix).lock(name).owners;
  const heldOn = async (key: string) => Promise.all([0, 1, 2].map(async (i) => (await masters.raw(i).exists(key)) === 1));
  /** True once no master lists any hold of the lock (late grants handed back, late releases run). */
  const noHoldLeft = (keyPrefix: string, name: string, withinMs = 2_000) =>
    holdsWithin(async () => (await heldOn(ownersKey(keyPrefix, name))).every((held) => !held), withinMs);
  /** Master `i` stops running writes (scripts) until `resume(i)`; reads and CLIENT commands still pass. */
  const pause = (i: number) => masters.raw(i).call('CLIENT', 'PAUSE', '60000', 'WRITE');
  const resume = (i: number) => masters.raw(i).call('CLIENT', 'UNPAUSE');

  /**
   * Lock sections from `workers` loops per service, each writing its token to a fenced store (which
   * refuses a token not above the last): counts overlapping sections and refused writes.
   */
  async function fencedSections(services: LockService[], name: string, { workers = 2, rounds = 5 } = {}) {
    const storeKey = `${uniquePrefix('fenced')}:${name}`;
    let inside = 0;
    let overlaps = 0;
    let refused = 0;
    let sections = 0;
    const tokens: bigint[] = [];
    const loop = async (locks: LockService) => {
      for (let i = 0; i < rounds; i++) {
        await locks.using(
          name,
          async (lock) => {
            if (++inside > 1) overlaps++;
            tokens.push(BigInt(lock.fencingToken));
            if (!(await fencedWrite(store, storeKey, lock.fencingToken, String(sections)))) refused++;
            sections++;
            inside--;
          },
          { waitTimeout: 30_000 },
        );
      }
    };
    await Promise.all(services.flatMap((locks) => Array.from({ length: workers }, () => loop(locks))));
    return { sections, overlaps, refused, increasing: strictlyIncreasing(tokens) };
  }

  /** Another service takes the lock now and lets it go; false when it is held. */
  async function otherGetsIt(locks: LockService, name: string): Promise<boolean> {
    const other = await locks.tryAcquire(name);
    await other?.release();
    return other !== null;
  }

  describe('killed and paused masters (direct connections)', () => {
    // Tries follow each other at once (no retry delay, no jitter), so one is always in flight.
    const pair = useRedlockPairOn(() => masters.urls, {
      lock: { leaseTime: 5_000 },
      redlock: { requestTimeout: 200, retryDelay: 1, retryJitter: 0 },
    });

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
      expect(await noHoldLeft(pair.keyPrefix, name)).toBe(true);
    });

    it('acquires and releases with a paused master: no overlap, no refused fenced write, tokens growing', async () => {
      // Contenders need the retry jitter (on by default) to stop colliding on split votes.
      const contenders = await createRedlockPair(masters.urls, { lock: { leaseTime: 5_000 }, redlock: { requestTimeout: 200 } });
      try {
        await pause(2);
        try {
          const outcome = await fencedSections([contenders.a, contenders.b], 'paused-contention', { workers: 2, rounds: 5 });
          expect(outcome).toEqual({ sections: 20, overlaps: 0, refused: 0, increasing: true });
        } finally {
          await resume(2);
        }
        expect(await noHoldLeft(contenders.keyPrefix, 'paused-contention')).toBe(true);
      } finally {
        await contenders.close();
      }
    });

    it('re-enters with a paused master: same token, and the inner release leaves the outer hold exclusive', async () => {
      const name = 'paused-nested';
      let outerToken = '';
      await pair.a.using(name, async (outer) => {
        outerToken = outer.fencingToken;
        await pause(1);
        try {
          const inner = await pair.a.acquire(name, { waitTimeout: 5_000 });
          expect(inner.fencingToken).toBe(outer.fencingToken);
          await inner.release();
          expect(await otherGetsIt(pair.b, name)).toBe(false);
        } finally {
          await resume(1);
        }
        // The paused master ran the late re-entry and then its release.
        expect(await otherGetsIt(pair.b, name)).toBe(false);
        expect(outer.held).toBe(true);
      });
      // Well within the lease (5 s): a re-entry counted twice anywhere would keep it held.
      expect(await noHoldLeft(pair.keyPrefix, name)).toBe(true);
      const next = await pair.b.acquire(name);
      expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(outerToken));
      await next.release();
    });

    it("re-enters with the holder's own token when the masters answering the re-entry have counters apart", async () => {
      const name = 'apart-nested';
      const fence = `${ownersKey(pair.keyPrefix, name)}:fence`;
      await (await pair.a.acquire(name)).release();
      // Master 2's counter is ahead (it alone saw tries that lost) and it answers the acquire late:
      // the token comes from masters 0 and 1, master 2 keeps its late grant with its own value.
      const counters = await Promise.all([0, 1, 2].map(async (i) => BigInt((await masters.raw(i).get(fence)) ?? '0')));
      // An hour ahead: tokens also follow the masters' clocks (µs), which a slow run must not catch up with.
      const ahead = counters.reduce((x, y) => (x > y ? x : y)) + 3_600_000_000n;
      await masters.raw(2).set(fence, ahead.toString());
      await pause(2);
      let outer: LockHandle;
      try {
        outer = await pair.a.acquire(name);
      } finally {
        await resume(2);
      }
      expect(await holdsWithin(async () => (await heldOn(ownersKey(pair.keyPrefix, name)))[2], 5_000)).toBe(true);
      expect(BigInt(outer.fencingToken)).toBeLessThan(ahead);
      // The re-entry is answered by masters 0 and 2 only.
      await pair.a.runInScope(outer, async () => {
        await pause(1);
        try {
          const inner = await pair.a.acquire(name, { waitTimeout: 5_000 });
          expect(inner.fencingToken).toBe(outer.fencingToken);
          await inner.release();
        } finally {
          await resume(1);
        }
      });
      await outer.release();
      expect(await noHoldLeft(pair.keyPrefix, name)).toBe(true);
    });

    it('releases with a paused master: the majority frees it at once, the paused master when it resumes', async () => {
      const name = 'paused-release';
      const first = await pair.a.acquire(name);
      await pause(2);
      let next: LockHandle;
      try {
        await first.release();
        // Taken by the other service on the two masters that answer, while master 2 still pauses.
        next = await pair.b.acquire(name, { waitTimeout: 5_000 });
        expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(first.fencingToken));
      } finally {
        await resume(2);
      }
      // Master 2 runs the first release, then the second holder's late grant (kept: it won).
      expect(await holdsWithin(async () => (await heldOn(ownersKey(pair.keyPrefix, name)))[2], 5_000)).toBe(true);
      await next.release();
      expect(await noHoldLeft(pair.keyPrefix, name)).toBe(true);
    });
  });

  describe('watchdog and extend with a paused master (direct connections)', () => {
    // A 2 s lease, renewed every 667 ms, each master given 500 ms to answer: shorter ones lose a renewal
    // to a stall of a loaded CI machine's event loop, and a lease that ran out is rightly lost.
    const pair = useRedlockPairOn(() => masters.urls, { lock: { leaseTime: 2_000 }, redlock: { requestTimeout: 500 } });

    it('keeps renewing a lock through a master paused for several leases', async () => {
      const name = 'paused-watchdog';
      const lock = await pair.a.acquire(name);
      await pause(2);
      try {
        await sleep(6_500); // more than three leases of 2 s, each renewed by the two masters that answer
        expect(lock.held).toBe(true);
        expect(lock.signal.aborted).toBe(false);
        expect(await otherGetsIt(pair.b, name)).toBe(false);
      } finally {
        await resume(2);
      }
      // The paused master let the hold expire (its lease passed while paused) before it ran the
      // late renewals; the majority that renewed keeps it exclusive.
      expect(await otherGetsIt(pair.b, name)).toBe(false);
      expect(lock.held).toBe(true);
      await lock.release();
      expect(await noHoldLeft(pair.keyPrefix, name)).toBe(true);
    });

    it('extends through a paused master, past the lease it was taken with', async () => {
      const name = 'paused-extend';
      const lock = await pair.a.acquire(name, { leaseTime: 900 }); // explicit lease: no watchdog
      await pause(1);
      try {
        await lock.extend(8_000);
        await sleep(1_200); // past the first lease
        expect(lock.held).toBe(true);
        expect(await otherGetsIt(pair.b, name)).toBe(false);
      } finally {
        await resume(1);
      }
      // The majority that answered carries the extended lease.
      const key = ownersKey(pair.keyPrefix, name);
      const ttls = await Promise.all([0, 2].map((i) => masters.raw(i).pttl(key)));
      expect(ttls.every((ttl) => ttl > 3_000)).toBe(true);
      expect(await otherGetsIt(pair.b, name)).toBe(false);
      await lock.release();
      expect(await noHoldLeft(pair.keyPrefix, name)).toBe(true);
    });
  });

  describe('one master behind fault proxies: latency and lost replies', () => {
    let apps: TestingModule[];
    /** Through the fault proxies. */
    let a: LockService;
    /** Another process, on direct connections. */
    let b: LockService;
    let keyPrefix: string;

    beforeAll(async () => {
      keyPrefix = uniquePrefix('rll');
      const options = { keyPrefix, lock: { leaseTime: 3_000 }, redlock: { requestTimeout: 200 } };
      apps = await Promise.all([createRedlockApp(masters.proxiedUrls, options), createRedlockApp(masters.urls, options)]);
      [a, b] = apps.map((app) => app.get(LockService));
    });
    afterAll(async () => {
      await Promise.all(apps.map((app) => app.close()));
    });
    /** Proxies given a latency by the running test. */
    const slowed = new Set<number>();
    const slowDown = (i: number, ms: number) => {
      slowed.add(i);
      masters.proxies[i].setLatency(ms);
    };
    /**
     * Ends the latency of the proxies `slowDown` touched, and resets their connections. FaultProxy
     * delays each chunk by the latency in force when the chunk arrived, so once the latency drops,
     * newer bytes overtake older ones still delayed: a reordering no TCP connection makes, which
     * hands one command's reply to another (an acquire read a late release's `0`, its hold leaked).
     * The reset drops what is still delayed; the clients re-send what was not answered.
     */
    const endLatency = async () => {
      for (const i of slowed) {
        masters.proxies[i].setLatency(0);
        masters.proxies[i].resetAll();
      }
      slowed.clear();
      await mastersReconnected(apps);
    };

    afterEach(async () => {
      expect(masters.proxies.map((proxy) => proxy.pendingLostReplies)).toEqual([0, 0, 0]);
      await endLatency();
    });

    /** Matches a script run on the lock `name` (its first key is the owner hash `…{name}`). */
    const on = (name: string) => (keysAndArgs: readonly string[]) => keysAndArgs[0]?.endsWith(`{${name}}`) ?? false;

    it('a master whose every answer comes after requestTimeout: acquire, re-entry, renewal, extend and release stay correct', async () => {
      slowDown(2, 150); // 300 ms a round trip, requestTimeout 200
      const outcome = await fencedSections([a, b], 'slow', { workers: 2, rounds: 4 });
      expect(outcome).toEqual({ sections: 16, overlaps: 0, refused: 0, increasing: true });

      await a.using('slow-held', async (outer) => {
        const inner = await a.acquire('slow-held');
        expect(inner.fencingToken).toBe(outer.fencingToken);
        await inner.release();
        await sleep(3_300); // more than a lease: the watchdog renews on the two fast masters
        expect(outer.held).toBe(true);
        await outer.extend(5_000);
        expect(await otherGetsIt(b, 'slow-held')).toBe(false);
      });
      expect(await noHoldLeft(keyPrefix, 'slow')).toBe(true);
      expect(await noHoldLeft(keyPrefix, 'slow-held')).toBe(true);
    });

    it('an acquire whose reply is lost on one master and re-sent counts one hold there', async () => {
      const name = 'lost-acquire';
      const lost = masters.proxies[1].loseReply(FaultProxy.script(acquireLockScript, on(name)));
      const lock = await a.acquire(name);
      await lost;
      expect(await otherGetsIt(b, name)).toBe(false);
      await lock.release();
      // Well within the lease: the re-sent copy counted nothing more on master 1.
      expect(await noHoldLeft(keyPrefix, name, 1_500)).toBe(true);
      const next = await b.acquire(name);
      expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(lock.fencingToken));
      await next.release();
    });

    it('a nested acquire whose reply is lost on two masters and re-sent leaves nothing held after both releases', async () => {
      const name = 'lost-nested-acquire';
      await a.using(name, async () => {
        const lost = [0, 1].map((i) => masters.proxies[i].loseReply(FaultProxy.script(acquireLockScript, on(name))));
        const inner = await a.acquire(name, { waitTimeout: 5_000 });
        await Promise.all(lost);
        await inner.release();
        expect(await otherGetsIt(b, name)).toBe(false);
      });
      // A re-entry counted twice would keep the lock held after both releases until its lease ran out.
      expect(await noHoldLeft(keyPrefix, name)).toBe(true);
      expect(await otherGetsIt(b, name)).toBe(true);
    });

    it('a nested release whose reply is lost on two masters and re-sent leaves the outer hold in place', async () => {
      const name = 'lost-nested-release';
      await a.using(name, async (outer) => {
        const inner = await a.acquire(name);
        const lost = [0, 1].map((i) => masters.proxies[i].loseReply(FaultProxy.script(releaseRedlockScript, on(name))));
        await inner.release();
        await Promise.all(lost);
        await mastersReconnected(apps);
        // Released twice, the outer hold would be gone from a majority and another process would get it.
        expect(await otherGetsIt(b, name)).toBe(false);
        expect(outer.held).toBe(true);
      });
      expect(await noHoldLeft(keyPrefix, name)).toBe(true);
    });

    it('a release whose reply is lost on two masters and re-sent frees the lock once, never a later holder', async () => {
      const name = 'lost-release';
      const first = await a.acquire(name);
      const lost = [0, 1].map((i) => masters.proxies[i].loseReply(FaultProxy.script(releaseRedlockScript, on(name))));
      await first.release();
      const next = await b.acquire(name, { waitTimeout: 5_000 });
      await Promise.all(lost);
      await mastersReconnected(apps);
      // The re-sent releases ran after the next holder took the lock: they must not free it.
      expect(await otherGetsIt(a, name)).toBe(false);
      expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(first.fencingToken));
      await next.release();
      expect(await noHoldLeft(keyPrefix, name)).toBe(true);
    });

    it('a release sent while two masters are reconnecting reaches them once they are back', async () => {
      const name = 'release-reconnecting';
      const lock = await a.acquire(name);
      // Both connections drop at once (as after a network blip); the release cannot reach them now.
      const clients = apps[0].get(RedlockMasters).masters.map((master) => master.client);
      masters.proxies[0].resetAll();
      masters.proxies[1].resetAll();
      expect(await holdsWithin(async () => clients[0].status !== 'ready' && clients[1].status !== 'ready', 2_000)).toBe(true);
      await lock.release();
      // Well within the lease (3 s): the masters got the release when their connections came back.
      expect(await noHoldLeft(keyPrefix, name)).toBe(true);
      expect(await otherGetsIt(b, name)).toBe(true);
    });

    it('a watchdog renewal and an extend whose replies are lost and re-sent keep the lock', async () => {
      const name = 'lost-renewal';
      const lock = await a.acquire(name);
      const renewal = masters.proxies[1].loseReply(FaultProxy.script(renewLocksScript, on(name)));
      await renewal;
      // Two separate faults: master 1 is back before the extend. Otherwise the extend's quorum would
      // hang on master 0's re-sent reply beating requestTimeout (200 ms) through a reconnect, a race
      // of reconnect timing (ioredis 6's default first retry alone may wait 250 ms), not of the scripts.
      await mastersReconnected(apps);
      const extension = masters.proxies[0].loseReply(FaultProxy.script(renewLocksScript, on(name)));
      await lock.extend(5_000);
      await extension;
      await mastersReconnected(apps);
      // Held on every master, and by nobody else.
      const key = ownersKey(keyPrefix, name);
      expect((await Promise.all([0, 1, 2].map((i) => masters.raw(i).pttl(key)))).every((ttl) => ttl > 1_000)).toBe(true);
      expect(lock.held).toBe(true);
      expect(await otherGetsIt(b, name)).toBe(false);
      await lock.release();
      expect(await noHoldLeft(keyPrefix, name)).toBe(true);
    });

    it('aborts the signal, not throws, when two masters answer only after the lease', async () => {
      const name = 'too-slow';
      const lock = await a.acquire(name);
      slowDown(0, 600);
      slowDown(1, 600);
      const reason = await abortReason(lock.signal);
      expect((reason as Error).name).toBe('LockLostError');
      await endLatency();
      await lock.release();
      // The lease runs out on the masters that could not be renewed in time.
      expect(await noHoldLeft(keyPrefix, name)).toBe(true);
      expect(await otherGetsIt(b, name)).toBe(true);
    });
  });
});
