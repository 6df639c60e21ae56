import { LockLostError, LockNotHeldError, RedisLockEvents } from '../../lib/index.js';
import { abortReason, sleep } from '../support/timing.js';
import { mastersReconnected, useRedlockPair } from './redlock-test-app.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

/** Lease renewal on a majority, and what a holder sees when the majority is gone. */
describe('Redlock: watchdog and lost locks', () => {
  // A 2 s lease, renewed every 667 ms, each master given 500 ms to answer: shorter ones lose a renewal
  // to a stall of a loaded CI machine's event loop, and a lease that ran out is rightly lost.
  const { masters, pair } = useRedlockPair({ lock: { leaseTime: 2_000 }, redlock: { requestTimeout: 500 } });

  const ownersKey = (name: string) => new RedisKeySpace(pair.keyPrefix).lock(name).owners;

  it('keeps a lock alive on the masters past several leases', async () => {
    const lock = await pair.a.acquire('alive');
    await sleep(6_500); // over three leases
    expect(lock.held).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    const ttls = await Promise.all([0, 1, 2].map((i) => masters.raw(i).pttl(ownersKey('alive'))));
    expect(ttls.every((ttl) => ttl > 0)).toBe(true);
    expect(await pair.b.tryAcquire('alive')).toBeNull();
    await lock.release();
    expect(await pair.b.isLocked('alive')).toBe(false);
  });

  it('extends by quorum, and lets a lock with an explicit lease expire', async () => {
    const lock = await pair.a.acquire('fixed', { leaseTime: 800 });
    await lock.extend(5_000);
    const ttls = await Promise.all([0, 1, 2].map((i) => masters.raw(i).pttl(ownersKey('fixed'))));
    expect(ttls.every((ttl) => ttl > 2_000)).toBe(true);
    await lock.release();

    const short = await pair.a.acquire('fixed', { leaseTime: 300 });
    const reason = await abortReason(short.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toBe('expired');
  });

  it('survives losing its entry on one master, and aborts its signal once a majority lost it', async () => {
    const events = pair.apps[0].get(RedisLockEvents);
    const lost = new Promise<{ key: string }>((resolve) => events.once('lock.lost', resolve));
    const lock = await pair.a.acquire('victim');
    await masters.raw(0).del(ownersKey('victim'));
    await sleep(1_500); // a couple of renewals
    expect(lock.held).toBe(true);

    await masters.raw(1).del(ownersKey('victim'));
    const reason = await abortReason(lock.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toBe('not-owner');
    expect((await lost).key).toBe('victim');
    expect(lock.held).toBe(false);
    await expect(lock.extend()).rejects.toBeInstanceOf(LockNotHeldError);
    await lock.release(); // quiet
  });

  it('aborts the signal when two of three masters die, before its valid lease could have run out', async () => {
    const lock = await pair.a.acquire('cut-off');
    const acquiredAt = performance.now();
    let abortedAt = 0;
    lock.signal.addEventListener('abort', () => (abortedAt = performance.now()));
    await masters.kill(0);
    await masters.kill(1);
    try {
      const reason = await abortReason(lock.signal);
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as LockLostError).reason).toBe('unconfirmed');
      // Renewals stop being confirmed at once; the handle gives up within about one lease.
      expect(abortedAt - acquiredAt).toBeLessThan(5_000);
    } finally {
      await masters.start(0);
      await masters.start(1);
      await mastersReconnected(pair.apps);
    }
  });
});
