import type { Redis } from 'ioredis';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { WAITING_MARK } from '../../lib/lock/protocols/lua-snippets.js';
import type { LockHandle, LockService } from '../../lib/index.js';
import { rawRedis, useLockServicePair } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';

/**
 * A release publishes its wake-up only when a waiter marked the lock (issue 17): an uncontended
 * acquire + release sends nothing on the wake channel, and every waiter is still woken by pub/sub
 * (long before the holder's lease would end), however many wait and whoever holds in between.
 */
describe('wake-up only when someone may be waiting', () => {
  const pair = useLockServicePair('awaited');
  const keys = new RedisKeySpace(pair.keyPrefix);
  let a: LockService;
  let b: LockService;
  let redis: Redis;
  let listener: Redis;
  const messages = new Map<string, string[]>();

  beforeAll(async () => {
    ({ a, b } = pair.services());
    redis = rawRedis();
    listener = rawRedis();
    await listener.psubscribe(`${pair.keyPrefix}*`);
    listener.on('pmessage', (_pattern: string, channel: string, message: string) => {
      messages.set(channel, [...(messages.get(channel) ?? []), message]);
    });
  });

  afterAll(async () => {
    redis.disconnect();
    listener.disconnect();
  });

  const published = (name: string) => messages.get(keys.lock(name).wakeChannel) ?? [];

  it('publishes nothing for uncontended acquire + release cycles, plain and fair', async () => {
    for (let i = 0; i < 20; i++) {
      await (await a.acquire('quiet', { leaseTime: 10_000 })).release();
      await (await a.acquire('quiet-fair', { fair: true, leaseTime: 10_000 })).release();
      await (await b.acquire('quiet')).release(); // watchdog mode too
    }
    // A message published by a release reaches the listener before the reply to its next ping.
    await listener.ping();
    expect(published('quiet')).toEqual([]);
    expect(published('quiet-fair')).toEqual([]);
    expect(await redis.exists(keys.lock('quiet').owners)).toBe(0);
  });

  it('marks a held lock when a caller starts waiting, and wakes it by pub/sub at the release', async () => {
    const holder = await a.acquire('marked', { leaseTime: 20_000 });
    expect(await redis.hexists(keys.lock('marked').owners, WAITING_MARK)).toBe(0);
    const started = performance.now();
    const waiting = b.acquire('marked', { waitTimeout: 15_000, leaseTime: 20_000 });
    await waitFor(async () => (await redis.hexists(keys.lock('marked').owners, WAITING_MARK)) === 1, 5_000, 'the waiter to mark the lock');
    await holder.release();
    const lock = await waiting;
    expect(performance.now() - started).toBeLessThan(10_000); // not the 20 s lease
    expect(published('marked')).toEqual(['1']);
    await lock.release();
  });

  it('a tryAcquire that finds the lock held does not mark it', async () => {
    const holder = await a.acquire('tried', { leaseTime: 20_000 });
    expect(await b.tryAcquire('tried')).toBeNull();
    expect(await redis.hexists(keys.lock('tried').owners, WAITING_MARK)).toBe(0);
    await holder.release();
    await listener.ping(); // after any message the release published
    expect(published('tried')).toEqual([]);
  });

  it('hands the lock from waiter to waiter: 8 waiters in two processes all get it, none waits for a lease', async () => {
    const holder = await a.acquire('chain', { leaseTime: 30_000 });
    const order: number[] = [];
    const waiters = Array.from({ length: 8 }, (_, i) =>
      (i % 2 ? a : b).acquire('chain', { waitTimeout: 20_000, leaseTime: 30_000 }).then(async (lock: LockHandle) => {
        order.push(i);
        await sleep(5);
        await lock.release();
      }),
    );
    await sleep(100); // every waiter has tried and parked
    const started = performance.now();
    await holder.release();
    await Promise.all(waiters);
    // A waiter that missed its wake-up would sit out the 30 s lease of the holder it saw.
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(order.sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await redis.exists(keys.lock('chain').owners)).toBe(0);
  });

  it('a newcomer racing a waiter for a release: both get the lock, neither waits for a lease', async () => {
    const holder = await a.acquire('barge', { leaseTime: 30_000 });
    const takeAndRelease = (locks: LockService) =>
      locks.acquire('barge', { waitTimeout: 20_000, leaseTime: 30_000 }).then(async (lock) => {
        await sleep(20);
        await lock.release();
      });
    const waiter = takeAndRelease(b);
    await waitFor(async () => (await redis.hexists(keys.lock('barge').owners, WAITING_MARK)) === 1, 5_000, 'the waiter to mark the lock');
    const started = performance.now();
    // The newcomer's first try and the release land together: whoever wins, the other is woken.
    const newcomer = takeAndRelease(a);
    await holder.release();
    await Promise.all([waiter, newcomer]);
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(await redis.exists(keys.lock('barge').owners)).toBe(0);
  });

  it('wakes the head of a fair queue at every release, in order', async () => {
    const holder = await a.acquire('fair-chain', { fair: true, leaseTime: 30_000 });
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 4; i++) {
      waiters.push(
        (i % 2 ? a : b).acquire('fair-chain', { fair: true, waitTimeout: 20_000, leaseTime: 30_000 }).then(async (lock) => {
          order.push(i);
          await lock.release();
        }),
      );
      // In the queue before the next one comes: they queue in this order.
      await waitFor(async () => (await redis.llen(keys.lock('fair-chain').queue)) === i + 1, 10_000, `waiter ${i} in the fair queue`);
    }
    const started = performance.now();
    await holder.release();
    await Promise.all(waiters);
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(order).toEqual([0, 1, 2, 3]);
  });
});
