import { LockAcquireTimeoutError, RedisConnectionError } from '../../lib/index.js';
import { startIndependentMasters, type IndependentMasters } from '../support/independent-masters.js';
import {
  contendedIncrements,
  expectWaitTimeoutHonoured,
  mastersReconnected,
  strictlyIncreasing,
  useRedlockPairOn,
} from './redlock-test-app.js';
import { sleep } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

failOnUnhandledRejections({ after: 'each' });

/** Masters that stop answering, die or come back while two services contend for locks. */
describe('Redlock: a minority of masters down or unreachable', () => {
  let masters: IndependentMasters;
  // requestTimeout well above a reply's time on a loaded 2-core machine: a healthy master that
  // answers late must not count as down (300 ms was missed there, and a release found no master).
  const options = { lock: { leaseTime: 3_000 }, redlock: { requestTimeout: 1_500 } };

  beforeAll(async () => {
    masters = await startIndependentMasters(3);
  });
  afterAll(async () => {
    await masters?.stop();
  });

  describe('through fault proxies', () => {
    const pair = useRedlockPairOn(() => masters.proxiedUrls, options);

    it('acquires within a bounded time with one master black-holed, and still honours waitTimeout', async () => {
      masters.blackhole(1);
      try {
        const started = performance.now();
        const { count, overlaps, tokens } = await contendedIncrements([pair.a, pair.b], 'bh', { workers: 2, rounds: 5 });
        expect(overlaps).toBe(0);
        expect(count).toBe(20);
        expect(strictlyIncreasing(tokens)).toBe(true);
        // 20 sections with a master that never answers: each try decides on the two that do.
        expect(performance.now() - started).toBeLessThan(20_000);
        await expectWaitTimeoutHonoured(pair, 'bh-wait', 500);
      } finally {
        masters.heal(1);
      }
    });
  });

  describe('killed and restarted', () => {
    const pair = useRedlockPairOn(() => masters.urls, options);

    it('keeps exclusion and increasing tokens with one of three masters down, and uses it again once back', async () => {
      await masters.kill(2);
      try {
        const { count, tokens, overlaps } = await contendedIncrements([pair.a, pair.b], 'one-down', { workers: 2, rounds: 10 });
        expect(overlaps).toBe(0);
        expect(count).toBe(40);
        expect(strictlyIncreasing(tokens)).toBe(true);
      } finally {
        await masters.start(2);
        await mastersReconnected(pair.apps);
      }
      // The master reconnects in the background; new holds then reach it too.
      const key = new RedisKeySpace(pair.keyPrefix).lock('one-down').owners;
      const deadline = performance.now() + 20_000;
      let onAll = false;
      while (!onAll && performance.now() < deadline) {
        const lock = await pair.a.acquire('one-down');
        onAll = (await masters.raw(2).exists(key)) === 1;
        await lock.release();
        if (!onAll) await sleep(200);
      }
      expect(onAll).toBe(true);
    });

    it('fails to lock with two of three masters down, and works again when one is back', async () => {
      await masters.kill(0);
      await masters.kill(1);
      try {
        expect(await pair.a.tryAcquire('two-down')).toBeNull();
        const started = performance.now();
        const error = await pair.a.acquire('two-down', { waitTimeout: 1_000 }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LockAcquireTimeoutError);
        expect(performance.now() - started).toBeLessThan(10_000);
        await expect(pair.a.isLocked('two-down')).resolves.toBe(false);
      } finally {
        await masters.start(0);
        await masters.start(1);
        await mastersReconnected(pair.apps);
      }
      const lock = await pair.a.acquire('two-down', { waitTimeout: 30_000 });
      expect(lock.held).toBe(true);
      await lock.release();
    });

    it('reports an unreachable quorum on isLocked only when no master answers', async () => {
      await Promise.all([0, 1, 2].map((i) => masters.kill(i)));
      try {
        await expect(pair.a.isLocked('nobody')).rejects.toBeInstanceOf(RedisConnectionError);
      } finally {
        await Promise.all([0, 1, 2].map((i) => masters.start(i)));
        await mastersReconnected(pair.apps);
      }
    });
  });
});
