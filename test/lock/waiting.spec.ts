import { LockAcquireAbortedError, LockAcquireTimeoutError } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { rawRedis, useLockServicePair } from '../support/test-app.js';
import { watchEventLoopStalls } from '../support/event-loop-stalls.js';
import { sleep } from '../support/timing.js';

describe('waiting', () => {
  // Two module instances on one prefix behave like two processes.
  const { keyPrefix, a, b } = useLockServicePair('wait');
  const redis = rawRedis();
  afterAll(() => redis.disconnect());

  it('wakes a waiter through pub/sub long before the holder’s 20 s lease would end', async () => {
    const holder = await a.acquire('wake', { leaseTime: 20_000 });
    const started = performance.now();
    const waiting = b.acquire('wake', { waitTimeout: 15_000, leaseTime: 20_000 });
    setTimeout(() => void holder.release(), 100);
    const lock = await waiting;
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(90);
    expect(waited).toBeLessThan(3_000); // no polling: without the wake it would take the 20 s lease
    await lock.release();
  });

  it('falls back to the holder’s TTL when the holder dies without releasing', async () => {
    await a.acquire('crashed', { leaseTime: 300 }); // never released: stands for a crashed process
    // The lease left is read after the clock starts, so a pause of this process anywhere here can
    // only lengthen the measured wait: the waiter cannot get the lock before the lease runs out.
    const started = performance.now();
    const leaseLeft = await redis.pttl(new RedisKeySpace(keyPrefix).lock('crashed').owners);
    const lock = await b.acquire('crashed', { waitTimeout: 5_000 });
    const waited = performance.now() - started;
    expect(leaseLeft).toBeGreaterThan(0);
    expect(waited).toBeGreaterThanOrEqual(leaseLeft - 5);
    expect(waited).toBeLessThan(3_000);
    await lock.release();
  });

  it('throws LockAcquireTimeoutError after waitTimeout', async () => {
    const holder = await a.acquire('busy', { leaseTime: 10_000 });
    const started = performance.now();
    const error = await b.acquire('busy', { waitTimeout: 200 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquireTimeoutError);
    expect((error as LockAcquireTimeoutError).message).toMatch(/within 200 ms/);
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    await holder.release();
  });

  it('cancels a pending acquire when its AbortSignal fires, and takes nothing', async () => {
    const holder = await a.acquire('abort', { leaseTime: 10_000 });
    const controller = new AbortController();
    const pending = b.acquire('abort', { waitTimeout: 10_000, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('client went away')), 50);
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquireAbortedError);
    expect((error as LockAcquireAbortedError).cause).toEqual(new Error('client went away'));
    await holder.release();
    expect(await a.isLocked('abort')).toBe(false);
  });

  it('rejects at once with an already-aborted signal', async () => {
    await expect(a.acquire('pre', { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(LockAcquireAbortedError);
    expect(await a.isLocked('pre')).toBe(false);
  });

  it('tryAcquire never waits', async () => {
    const holder = await a.acquire('try', { leaseTime: 10_000 });
    // Its time less any stall of this process meanwhile (a loaded CI host).
    const stalls = watchEventLoopStalls();
    const started = Date.now();
    expect(await b.tryAcquire('try')).toBeNull();
    expect(stalls.runnableSince(started)).toBeLessThan(1_000);
    stalls.stop();
    await holder.release();
    const lock = await b.tryAcquire('try');
    expect(lock?.held).toBe(true);
    await lock!.release();
  });

  it('hands a contended lock to every waiter in turn without losing wake-ups', async () => {
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (i % 2 ? a : b).using(
          'queue',
          async () => {
            order.push(i);
            await sleep(5);
          },
          { waitTimeout: 10_000, leaseTime: 30_000 },
        ),
      ),
    );
    expect(order.sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => i));
  });

  it('releases at the end of an `await using` block', async () => {
    {
      await using lock = await a.acquire('scoped');
      expect(lock.held).toBe(true);
      expect(await b.tryAcquire('scoped')).toBeNull();
    }
    const after = await b.tryAcquire('scoped');
    expect(after).not.toBeNull();
    await after!.release();
  });

  it('releases after using() even when the callback throws, and rethrows the caller’s error untouched', async () => {
    const mine = new RangeError('mine');
    await expect(
      a.using('throws', () => {
        throw mine;
      }),
    ).rejects.toBe(mine);
    expect(await a.isLocked('throws')).toBe(false);
  });
});
