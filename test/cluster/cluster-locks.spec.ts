import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
import calculateSlot from 'cluster-key-slot';
import { LockContext, LockService, RedisLockModule, WithLock } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { createClusterLockApp, rawCluster, uniqueClusterPrefix, useSharedTestCluster } from '../support/redis-cluster.js';
import { sleep, waitFor } from '../support/timing.js';

/** Names whose lock keys land on different masters of the 3-master test cluster. */
async function namesOnDistinctMasters(
  cluster: ReturnType<typeof useSharedTestCluster>,
  keyPrefix: string,
  count: number,
): Promise<string[]> {
  const keySpace = new RedisKeySpace(keyPrefix);
  const byMaster = new Map<number, string>();
  for (let i = 0; byMaster.size < count && i < 200; i++) {
    const name = `acct-${i}`;
    const master = await cluster.topology().masterOfSlot(calculateSlot(keySpace.lock(name).owners));
    if (!byMaster.has(master.port)) byMaster.set(master.port, name);
  }
  return [...byMaster.values()];
}

@Injectable()
class TransferService {
  readonly seen: Array<{ key: string; token: string }> = [];
  @WithLock(['acct:<0>', 'acct:<1>'])
  async transfer(from: string, to: string): Promise<string> {
    const context = LockContext.current();
    this.seen.push({ key: context?.key ?? '', token: context?.fencingToken ?? '' });
    return `${from}->${to}`;
  }
}

describe('locks on a Redis Cluster', () => {
  const cluster = useSharedTestCluster();
  const keyPrefix = uniqueClusterPrefix('cl');
  let apps: TestingModule[] = [];
  let a: LockService;
  let b: LockService;
  let raw: Cluster;

  beforeAll(async () => {
    apps = await Promise.all([createClusterLockApp(cluster.nodes(), { keyPrefix }), createClusterLockApp(cluster.nodes(), { keyPrefix })]);
    [a, b] = apps.map((app) => app.get(LockService));
    raw = rawCluster(cluster.nodes());
  });
  afterAll(async () => {
    raw.disconnect();
    await Promise.all(apps.map((app) => app.close()));
  });

  it('excludes a second holder and hands out growing fencing tokens', async () => {
    const first = await a.acquire('plain', { leaseTime: 10_000 });
    expect(await b.tryAcquire('plain')).toBeNull();
    expect(await b.isLocked('plain')).toBe(true);
    await first.release();
    const second = await b.acquire('plain', { waitTimeout: 2_000 });
    expect(BigInt(second.fencingToken)).toBeGreaterThan(BigInt(first.fencingToken));
    await second.release();
    expect(await a.isLocked('plain')).toBe(false);
  });

  it('wakes a waiter through sharded pub/sub long before the holder’s 20 s lease would end', async () => {
    const holder = await a.acquire('wake', { leaseTime: 20_000 });
    const started = performance.now();
    const waiting = b.acquire('wake', { waitTimeout: 15_000, leaseTime: 20_000 });
    setTimeout(() => void holder.release(), 200);
    const lock = await waiting;
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(150);
    expect(waited).toBeLessThan(5_000);
    await lock.release();
  });

  it('wakes waiters promptly on keys served by every master', async () => {
    const names = await namesOnDistinctMasters(cluster, keyPrefix, 3);
    expect(names).toHaveLength(3);
    const holders = await Promise.all(names.map((name) => a.acquire(`wake-${name}`, { leaseTime: 20_000 })));
    const started = performance.now();
    const waiting = names.map((name) => b.acquire(`wake-${name}`, { waitTimeout: 15_000, leaseTime: 20_000 }));
    setTimeout(() => void Promise.all(holders.map((h) => h.release())), 200);
    const locks = await Promise.all(waiting);
    expect(performance.now() - started).toBeLessThan(5_000);
    await Promise.all(locks.map((l) => l.release()));
  });

  it('re-enters in the same call chain and not from another', async () => {
    await a.using('reentrant', async (outer) => {
      const inner = await a.acquire('reentrant', { waitTimeout: 0 });
      expect(inner.fencingToken).toBe(outer.fencingToken);
      await inner.release();
      expect(outer.held).toBe(true);
      const again = await a.tryAcquire('reentrant'); // same chain: re-enters
      expect(again).not.toBeNull();
      await again!.release();
      expect(await b.tryAcquire('reentrant')).toBeNull();
    });
    expect(await a.isLocked('reentrant')).toBe(false);
  });

  it('runs a fair lock in arrival order, woken by sharded pub/sub', async () => {
    const holder = await a.acquire('fair', { fair: true, leaseTime: 20_000 });
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 4; i++) {
      const service = i % 2 ? a : b;
      waiters.push(service.using('fair', () => void order.push(i), { fair: true, waitTimeout: 15_000, leaseTime: 20_000 }));
      // In the queue before the next one comes: they queue in this order.
      await waitFor(
        async () => (await raw.llen(new RedisKeySpace(keyPrefix).lock('fair').queue)) === i + 1,
        10_000,
        `waiter ${i} in the fair queue`,
      );
    }
    const started = performance.now();
    await holder.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3]);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('shares a read lock and wakes a writer when the readers leave', async () => {
    const r1 = await a.readWrite('rw').read({ leaseTime: 20_000 });
    const r2 = await b.readWrite('rw').read({ leaseTime: 20_000 });
    const started = performance.now();
    const writer = a.readWrite('rw').write({ waitTimeout: 15_000, leaseTime: 20_000 });
    await waitFor(
      async () => (await raw.zcard(new RedisKeySpace(keyPrefix).lock('rw').waitingWriters)) === 1,
      10_000,
      'the writer to wait',
    );
    await Promise.all([r1.release(), r2.release()]);
    const w = await writer;
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await b.readWrite('rw').tryRead()).toBeNull();
    await w.release();
  });

  it('limits a semaphore to its permits and wakes a waiter on release', async () => {
    const sem = (s: LockService) => s.semaphore('pool', 2);
    const p1 = await sem(a).acquire({ leaseTime: 20_000 });
    const p2 = await sem(b).acquire({ leaseTime: 20_000 });
    expect(await sem(a).tryAcquire()).toBeNull();
    const started = performance.now();
    const third = sem(b).acquire({ waitTimeout: 15_000, leaseTime: 20_000 });
    setTimeout(() => void p1.release(), 100);
    const p3 = await third;
    expect(performance.now() - started).toBeLessThan(5_000);
    await Promise.all([p2.release(), p3.release()]);
  });

  it('takes a multi-key lock over keys on different masters, all or nothing', async () => {
    const names = await namesOnDistinctMasters(cluster, keyPrefix, 3);
    const slots = new Set(names.map((n) => calculateSlot(new RedisKeySpace(keyPrefix).lock(n).owners)));
    expect(slots.size).toBe(3);
    const all = await a.acquire(names, { leaseTime: 10_000 });
    for (const name of names) expect(await b.isLocked(name)).toBe(true);
    expect(await b.tryAcquire([names[2], 'free-key'])).toBeNull();
    expect(await b.isLocked('free-key')).toBe(false); // nothing kept from the failed attempt
    await all.release();
    for (const name of names) expect(await b.isLocked(name)).toBe(false);
    // Two contenders over the same keys in opposite order never deadlock: keys are taken in sorted order.
    let inside = 0;
    let overlap = false;
    const run = (s: LockService, keys: string[]) =>
      s.using(
        keys,
        async () => {
          inside++;
          if (inside > 1) overlap = true;
          await sleep(10);
          inside--;
        },
        { waitTimeout: 15_000 },
      );
    await Promise.all(Array.from({ length: 6 }, (_, i) => run(i % 2 ? a : b, i % 2 ? names : [...names].reverse())));
    expect(overlap).toBe(false);
  });

  it('renews watchdog leases of locks in several slots, one batch per slot', async () => {
    const names = await namesOnDistinctMasters(cluster, keyPrefix, 3);
    // A 2 s lease (renewed every 667 ms): shorter ones lose their renewal to a stall of a loaded CI machine.
    const [app] = await Promise.all([createClusterLockApp(cluster.nodes(), { keyPrefix, lock: { leaseTime: 2_000 } })]);
    try {
      const service = app.get(LockService);
      const handles = await Promise.all([
        ...names.map((n) => service.acquire(`wd-${n}`)),
        service.semaphore('wd-sem', 2).acquire(),
        service.readWrite('wd-rw').read(),
      ]);
      await sleep(6_500); // more than three leases
      for (const h of handles) {
        expect(h.held).toBe(true);
        expect(h.signal.aborted).toBe(false);
      }
      for (const n of names) expect(await b.isLocked(`wd-${n}`)).toBe(true);
      const ttl = await raw.pttl(new RedisKeySpace(keyPrefix).lock(`wd-${names[0]}`).owners);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(2_000);
      await Promise.all(handles.map((h) => h.release()));
    } finally {
      await app.close();
    }
  });

  it('serves @WithLock on a provider with a multi-key template across slots', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ redis: { cluster: cluster.nodes() }, keyPrefix })],
      providers: [TransferService],
    }).compile();
    await moduleRef.init();
    try {
      const service = moduleRef.get(TransferService);
      const names = await namesOnDistinctMasters(cluster, keyPrefix, 2);
      const results = await Promise.all([service.transfer(names[0], names[1]), service.transfer(names[1], names[0])]);
      expect(results).toEqual([`${names[0]}->${names[1]}`, `${names[1]}->${names[0]}`]);
      expect(service.seen).toHaveLength(2);
      expect(await a.isLocked(`acct:${names[0]}`)).toBe(false);
    } finally {
      await moduleRef.close();
    }
  });

  it('keeps every key of one lock in one slot (no CROSSSLOT), with user braces escaped', async () => {
    const name = 'odd{name}with}braces';
    const lock = await a.acquire(name, { fair: true, leaseTime: 5_000 });
    const keys = new RedisKeySpace(keyPrefix).lock(name);
    const slots = new Set(
      [keys.owners, keys.fence, keys.queue, keys.timeouts, keys.leases, keys.waitingWriters, keys.wakeChannel].map((k) => calculateSlot(k)),
    );
    expect(slots.size).toBe(1);
    expect(await raw.exists(keys.owners)).toBe(1);
    await lock.release();
  });
});
