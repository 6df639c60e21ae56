import { InvalidOptionsError } from '../../lib/index.js';
import { rawRedis, useLockServicePair } from '../support/test-app.js';
import { sleep } from '../support/timing.js';

describe('semaphore', () => {
  // A lease far longer than any pause of a loaded machine: this test is about the permit count, and a
  // permit whose lease ran out during a pause is rightly given to the next waiter.
  const { keyPrefix, a, b } = useLockServicePair('sem-count', { lock: { leaseTime: 10_000 } });

  it('never lets more than `permits` holders in, and never oversells stock', async () => {
    const redis = rawRedis();
    await redis.set(`${keyPrefix}:stock`, '5');
    let inside = 0;
    let maxInside = 0;
    let sold = 0;
    const buyer = async (i: number) => {
      const permit = await (i % 2 ? a : b).semaphore('sku-1', 3).acquire({ waitTimeout: 20_000 });
      try {
        inside++;
        maxInside = Math.max(maxInside, inside);
        // Three buyers at a time may pass the gate; the stock itself is guarded by a lock.
        await (i % 2 ? a : b).using('stock', async () => {
          const left = Number(await redis.get(`${keyPrefix}:stock`));
          if (left > 0) {
            await redis.set(`${keyPrefix}:stock`, String(left - 1));
            sold++;
          }
        });
        await sleep(5);
      } finally {
        inside--;
        await permit.release();
      }
    };
    await Promise.all(Array.from({ length: 20 }, (_, i) => buyer(i)));
    expect(maxInside).toBeLessThanOrEqual(3);
    expect(maxInside).toBeGreaterThan(1);
    expect(sold).toBe(5);
    expect(Number(await redis.get(`${keyPrefix}:stock`))).toBe(0);
    redis.disconnect();
  });
});

describe('semaphore with expiring permits', () => {
  // Two module instances on one prefix behave like two processes.
  const { a, b } = useLockServicePair('sem', { lock: { leaseTime: 600 } });

  it('gives a crashed holder’s permit back when its lease ends', async () => {
    await a.semaphore('leak', 1).acquire({ leaseTime: 300 }); // never released
    expect(await b.semaphore('leak', 1).tryAcquire()).toBeNull();
    const started = performance.now();
    const permit = await b.semaphore('leak', 1).acquire({ waitTimeout: 5_000 });
    expect(performance.now() - started).toBeLessThan(4_000);
    await permit.release();
  });

  it('wakes a waiter through pub/sub when a permit is released', async () => {
    const held = await a.semaphore('wake', 1).acquire({ leaseTime: 20_000 });
    const started = performance.now();
    const waiting = b.semaphore('wake', 1).acquire({ waitTimeout: 10_000 });
    setTimeout(() => void held.release(), 50);
    const permit = await waiting;
    expect(performance.now() - started).toBeLessThan(3_000); // no polling: without the wake it would time out
    await permit.release();
  });

  it('issues increasing fencing tokens per permit', async () => {
    const sem = a.semaphore('tokens', 2);
    const p1 = await sem.acquire();
    const p2 = await sem.acquire();
    expect(BigInt(p2.fencingToken)).toBeGreaterThan(BigInt(p1.fencingToken));
    await Promise.all([p1.release(), p2.release()]);
  });

  it.each([0, -1, 1.5, Number.NaN])('rejects %p permits', (permits) => {
    expect(() => a.semaphore('bad', permits)).toThrow(InvalidOptionsError);
  });
});

describe('semaphore permits renewed by the watchdog', () => {
  // A lease of 1.5 s, renewed every 500 ms: with 600 ms a loaded machine's event-loop stall of 400 ms
  // cost the permit its renewal in CI, and a permit whose lease ran out is rightly not held.
  const { a, b } = useLockServicePair('sem-renew', { lock: { leaseTime: 1_500 } });

  it('renews held permits with the watchdog past three leases', async () => {
    const permit = await a.semaphore('renew', 1).acquire();
    await sleep(4_600);
    expect(permit.held).toBe(true);
    expect(await b.semaphore('renew', 1).tryAcquire()).toBeNull();
    await permit.release();
    const next = await b.semaphore('renew', 1).tryAcquire();
    expect(next).not.toBeNull();
    await next!.release();
  });
});
