import { LockService } from '../../lib/index.js';
import { contendedIncrements, expectWaitTimeoutHonoured, strictlyIncreasing, useRedlockPair } from './redlock-test-app.js';
import { sleep } from '../support/timing.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

/** Two lock services (two "processes") on three independent masters. */
describe('Redlock: mutual exclusion on a majority of masters', () => {
  const { masters, pair } = useRedlockPair({ lock: { leaseTime: 5_000 } });

  it('keeps a read-modify-write counter exact across two services, tokens strictly increasing', async () => {
    const { count, tokens, overlaps } = await contendedIncrements([pair.a, pair.b], 'counter', { workers: 3, rounds: 15 });
    expect(overlaps).toBe(0);
    expect(count).toBe(2 * 3 * 15);
    expect(tokens).toHaveLength(90);
    expect(strictlyIncreasing(tokens)).toBe(true);
  });

  it('holds the lock on every master and frees it on every master on release', async () => {
    const lock = await pair.a.acquire('everywhere');
    const key = new RedisKeySpace(pair.keyPrefix).lock('everywhere').owners;
    const held = await Promise.all([0, 1, 2].map((i) => masters.raw(i).exists(key)));
    expect(held).toEqual([1, 1, 1]);
    expect(await pair.b.isLocked('everywhere')).toBe(true);
    expect(await pair.b.tryAcquire('everywhere')).toBeNull();
    await lock.release();
    await lock.release(); // idempotent
    const after = await Promise.all([0, 1, 2].map((i) => masters.raw(i).exists(key)));
    expect(after).toEqual([0, 0, 0]);
    expect(await pair.b.isLocked('everywhere')).toBe(false);
  });

  it('wakes a waiter in the other service when the holder releases (pub/sub, not the lease)', async () => {
    const held = await pair.a.acquire('handoff', { leaseTime: 20_000 });
    const waiting = pair.b.acquire('handoff', { waitTimeout: 15_000 });
    await sleep(200);
    const releasedAt = performance.now();
    await held.release();
    const next = await waiting;
    // The lease had ~20 s left: getting it within a few seconds means the release woke the waiter.
    expect(performance.now() - releasedAt).toBeLessThan(5_000);
    expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(held.fencingToken));
    await next.release();
  });

  it('re-enters a lock held by the enclosing section and releases it only with the outer one', async () => {
    await pair.a.using('nested', async (outer) => {
      const inner = await pair.a.acquire('nested', { waitTimeout: 0 });
      expect(inner.fencingToken).toBe(outer.fencingToken);
      await inner.release();
      expect(await pair.b.tryAcquire('nested')).toBeNull();
    });
    const after = await pair.b.tryAcquire('nested');
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('takes several keys all or nothing', async () => {
    const blocker = await pair.b.acquire('multi:b');
    expect(await pair.a.tryAcquire(['multi:a', 'multi:b'])).toBeNull();
    expect(await pair.a.isLocked('multi:a')).toBe(false); // nothing left behind
    await blocker.release();
    const both = await pair.a.acquire(['multi:b', 'multi:a']);
    expect(await pair.b.isLocked('multi:a')).toBe(true);
    expect(await pair.b.isLocked('multi:b')).toBe(true);
    await both.release();
  });

  it('respects waitTimeout while another service holds the lock', async () => {
    await expectWaitTimeoutHonoured(pair, 'busy', 300);
  });

  it('is the LockService everyone injects', () => {
    expect(pair.apps[0].get(LockService)).toBe(pair.a);
  });
});
