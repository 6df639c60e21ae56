import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import {
  DelayQueueService,
  LockNotReplicatedError,
  LockService,
  OnDelayed,
  RedisConnectionError,
  RedisLockModule,
  WithLock,
  type JobContext,
  type RedisLockModuleOptions,
} from '../../lib/index.js';
import { Test } from '@nestjs/testing';
import { findFreePort } from '../../lib/testing/local-redis-server.js';
import { sleep, waitFor } from '../support/timing.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { WAITING_MARK } from '../../lib/lock/protocols/lua-snippets.js';
import {
  heldLockOutcomes,
  createFailoverApp,
  GrantLedger,
  LockLoad,
  rounded,
  settleWait,
  THROUGH_FAILOVER,
} from './support/failover-harness.js';
import { useSentinelTopology } from './support/use-sentinel-topology.js';

@Injectable()
class Accounts {
  @WithLock('acct:<0>', { waitTimeout: 5_000 })
  async credit(id: string): Promise<string> {
    return `credited ${id}`;
  }
}

@Injectable()
class Reminders {
  readonly received: string[] = [];

  @OnDelayed('sentinel.reminder')
  remind(payload: { text: string }): void {
    this.received.push(payload.text);
  }
}

/**
 * Sentinel: the module connects through the sentinels, keeps working across a primary failover,
 * and with `syncReplicas` only hands out locks the replicas have confirmed.
 */
describe('Redis Sentinel', () => {
  const { apps, topology } = useSentinelTopology();

  const app = async (options: Partial<RedisLockModuleOptions> = {}, providers: Array<new (...a: never[]) => unknown> = []) => {
    const created = await createFailoverApp(
      { redis: { ...topology.redisOptions }, keyPrefix: `sn-${randomBytes(3).toString('hex')}`, ...options },
      providers,
    );
    apps.push(created);
    return created;
  };

  it('takes locks, runs @WithLock methods, wakes waiters and delivers delayed jobs through the sentinels', async () => {
    const keyPrefix = `sn-${randomBytes(3).toString('hex')}`;
    const moduleRef = await app({ keyPrefix }, [Accounts, Reminders]);
    const locks = moduleRef.get(LockService);

    const handle = await locks.acquire('order:1');
    expect(await locks.isLocked('order:1')).toBe(true);
    expect(await locks.tryAcquire('order:1')).toBeNull();
    // The lock lives on the primary the sentinels name.
    const primary = await topology.currentPrimary();
    expect(await topology.clientTo(primary.port).exists(new RedisKeySpace(keyPrefix).lock('order:1').owners)).toBe(1);

    const waiter = locks.acquire('order:1', { waitTimeout: 5_000 });
    // Refused, the waiter marks the lock as awaited and parks.
    const owners = new RedisKeySpace(keyPrefix).lock('order:1').owners;
    await waitFor(async () => (await topology.clientTo(primary.port).hexists(owners, WAITING_MARK)) === 1, 5_000, 'the waiter to park');
    await handle.release();
    await (await waiter).release();

    expect(await moduleRef.get(Accounts).credit('42')).toBe('credited 42');

    await moduleRef.get(DelayQueueService).schedule('sentinel.reminder', { text: 'hello' }, { delay: 50 });
    await waitFor(() => moduleRef.get(Reminders).received.includes('hello'), 10_000, 'the delayed job', THROUGH_FAILOVER);
  });

  it('names the sentinels, not localhost:6379, when it cannot reach Redis through them', async () => {
    const dead = await findFreePort();
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRoot({ redis: { sentinels: [{ host: '127.0.0.1', port: dead }], name: 'nomaster' }, connectTimeout: 1_000 }),
      ],
    }).compile();
    moduleRef.useLogger(false);
    const error = await moduleRef.init().then(
      () => undefined,
      (e: unknown) => e,
    );
    await moduleRef.close().catch(() => undefined);
    expect(error).toBeInstanceOf(RedisConnectionError);
    expect((error as Error).message).toContain(`sentinel master "nomaster" via [127.0.0.1:${dead}]`);
  });

  it('syncReplicas: hands out a lock only once the replicas confirm it, and releases it when they do not', async () => {
    const keyPrefix = `sn-${randomBytes(3).toString('hex')}`;
    const locks = (await app({ keyPrefix, lock: { syncReplicas: { replicas: 2, timeout: 1_000 } } })).get(LockService);
    const primary = await topology.currentPrimary();
    const replicas = topology.nodes.filter((n) => n.port !== primary.port && !n.killed);
    expect(replicas).toHaveLength(2);

    // Confirmed: both replicas have the lock by the time acquire resolves (no sleep needed).
    const confirmed = await locks.acquire('sync:1');
    for (const r of replicas) expect(await topology.clientTo(r.port).exists(new RedisKeySpace(keyPrefix).lock('sync:1').owners)).toBe(1);
    await confirmed.release();

    // What the confirmation costs on loopback: sequential acquire + release, median of 100.
    const median = async (opts: { syncReplicas?: false }) => {
      const times: number[] = [];
      for (let i = 0; i < 100; i++) {
        const t = performance.now();
        await (await locks.acquire('sync:cost', opts)).release();
        times.push(performance.now() - t);
      }
      return times.sort((x, y) => x - y)[50];
    };
    console.log(
      `syncReplicas cost (acquire + release, median of 100, loopback): ${(await median({ syncReplicas: false })).toFixed(2)} ms without, ` +
        `${(await median({})).toFixed(2)} ms with { replicas: 2 }`,
    );

    // More replicas than exist: WAIT times out, the lock is undone, the typed error says so.
    const started = performance.now();
    const error = await locks.acquire('sync:2', { syncReplicas: { replicas: 3, timeout: 200 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockNotReplicatedError);
    expect(error).toMatchObject({ code: 'LOCK_NOT_REPLICATED', replicas: 3, acknowledged: 2, timeout: 200 });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(await locks.isLocked('sync:2')).toBe(false);

    // One replica frozen: two confirmations are not to be had, one is.
    topology.pause(replicas[0].port);
    try {
      await expect(locks.tryAcquire('sync:3', { syncReplicas: { replicas: 2, timeout: 300 } })).rejects.toMatchObject({
        code: 'LOCK_NOT_REPLICATED',
        acknowledged: 1,
      });
      expect(await locks.isLocked('sync:3')).toBe(false);
      const one = await locks.semaphore('sync:sem', 2).acquire({ syncReplicas: { replicas: 1, timeout: 1_000 } });
      await one.release();
      // Turned off for one call: no WAIT at all.
      const unsynced = await locks.acquire('sync:4', { syncReplicas: false });
      await unsynced.release();
    } finally {
      topology.resume(replicas[0].port);
    }
  });

  /**
   * The primary is SIGKILLed while locks are held, waited for and taken in a loop, and delayed jobs
   * are running. Everything written before the kill has been confirmed by both replicas (a WAIT on
   * a marker write), so what this measures is the failover itself, not replication lag.
   */
  it('primary killed under load: measures recovery, held locks, waiters and in-flight jobs', async () => {
    const keyPrefix = `sn-${randomBytes(3).toString('hex')}`;
    const topic = 'failover.jobs';
    const handled = new Map<string, number>();
    const attempts: number[] = [];
    const lostVisibility: string[] = [];
    const handler = async (payload: { n: number }, job: JobContext) => {
      attempts.push(job.attempt);
      let running = true;
      job.signal.addEventListener('abort', () => running && lostVisibility.push(job.id));
      await sleep(1_000);
      running = false;
      handled.set(job.id, (handled.get(job.id) ?? 0) + 1);
    };
    const dq = { visibilityTimeout: 4_000, concurrency: 4, maxIdleWait: 2_000 };
    const a = await app({ keyPrefix, lock: { leaseTime: 10_000 }, delayQueue: { visibilityTimeout: 4_000 } });
    const b = await app({ keyPrefix, lock: { leaseTime: 10_000 }, delayQueue: { visibilityTimeout: 4_000 } });
    const c = await app({ keyPrefix, lock: { leaseTime: 1_500 } });
    const [lockA, lockB, lockC] = [a, b, c].map((m) => m.get(LockService));
    const queue = a.get(DelayQueueService);
    const consumers = [a, b].map((m) => m.get(DelayQueueService).consume(topic, handler, dq));

    // Held locks: one with a long lease (renewed every 3.3 s), one with a short one (every 0.5 s).
    const heldLong = await lockA.acquire('held:long');
    const heldShort = await lockC.acquire('held:short');
    // Waiters in another process for both.
    const waitLong = settleWait(lockB.acquire('held:long', { waitTimeout: 30_000 }));
    const waitShort = settleWait(lockB.acquire('held:short', { waitTimeout: 30_000 }));

    // Jobs: 8 running at the kill, 12 falling due during the failover.
    const ids: string[] = [];
    for (let n = 0; n < 8; n++) ids.push(await queue.schedule(topic, { n }));
    for (let n = 8; n < 20; n++) ids.push(await queue.schedule(topic, { n }, { delay: 800 + (n - 8) * 250 }));
    await waitFor(() => attempts.length >= 8, 5_000, 'eight jobs running', THROUGH_FAILOVER);

    const ledger = new GrantLedger();
    const load = new LockLoad([lockA, lockB], ['load:0', 'load:1', 'load:2', 'load:3'], ledger).start(2);
    await waitFor(() => load.successes.length > 0, 10_000, 'the load to take a lock');

    // Everything so far is on both replicas: a write after it, confirmed by WAIT, orders behind it.
    const before = await topology.primaryNode();
    const raw = topology.clientTo(before.port);
    await raw.set(`${keyPrefix}:marker`, '1');
    expect(await raw.call('WAIT', 2, 2_000)).toBe(2);

    let shortLostAt: number | undefined;
    heldShort.signal.addEventListener('abort', () => (shortLostAt = performance.now()));
    const { port: oldPort, killedAt } = await topology.killPrimary();
    // Producers and the holder carry on as if nothing happened.
    const scheduledDuring = Promise.allSettled([1, 2, 3, 4, 5].map((n) => queue.schedule(topic, { n: 100 + n }, { delay: 10 })));
    const releaseLong = sleep(500).then(() => heldLong.release());

    const promoted = await topology.waitForNewPrimary(oldPort);
    const failoverMs = performance.now() - killedAt;
    const recoveryMs = await load.recoveredAfter(killedAt, 'an acquire after the kill');
    await releaseLong.catch(() => undefined);
    const long = await waitLong;
    const short = await waitShort;
    const duringResults = await scheduledDuring;
    const duringIds = duringResults.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    await waitFor(() => [...ids, ...duringIds].every((id) => handled.has(id)), 20_000, 'every job handled', THROUGH_FAILOVER).catch(
      () => undefined,
    );
    await sleep(300);
    await load.stop();
    await Promise.all(consumers.map((k) => k.close()));

    const failuresByCode: Record<string, number> = {};
    for (const f of load.failures.filter((x) => x.at > killedAt)) failuresByCode[f.code] = (failuresByCode[f.code] ?? 0) + 1;
    const measurements = rounded({
      topology: 'sentinel (1 primary + 2 replicas, down-after 1000 ms)',
      newPrimary: promoted.port,
      failoverMs,
      recoveryMs,
      loadGrants: ledger.grants,
      loadOverlaps: ledger.overlaps,
      loadFencedRejections: ledger.fencedRejections,
      acquireFailuresDuringFailover: JSON.stringify(failuresByCode),
      ...heldLockOutcomes(killedAt, { holder: heldLong, waiter: long }, { holder: heldShort, waiter: short, lostAt: shortLostAt }),
      jobsScheduledBefore: ids.length,
      jobsHandledOfThose: ids.filter((id) => handled.has(id)).length,
      jobsHandledTwice: [...handled.values()].filter((n) => n > 1).length,
      jobRedeliveries: attempts.filter((n) => n > 1).length,
      jobsVisibilityLostWhileRunning: lostVisibility.length,
      schedulesDuringFailover: duringResults.length,
      schedulesDuringFailoverAccepted: duringIds.length,
      schedulesDuringFailoverHandled: duringIds.filter((id) => handled.has(id)).length,
    });
    console.log(`Sentinel failover measurements:\n${JSON.stringify(measurements, null, 2)}`);

    // Robust facts only; the numbers above are for the docs.
    expect(promoted.port).not.toBe(oldPort);
    expect(recoveryMs).toBeLessThan(20_000);
    expect(ledger.overlaps).toBe(0);
    // A lock confirmed by the replicas survives: nobody else got it before its holder let go.
    expect(heldLong.signal.aborted).toBe(false);
    // The short lease could not be renewed in time: its signal aborted before the waiter got it.
    expect(heldShort.signal.aborted).toBe(true);
    expect(shortLostAt).toBeDefined();
    expect(short.handle).toBeDefined();
    expect(short.at).toBeGreaterThanOrEqual(shortLostAt!);
    expect(long.handle).toBeDefined();
    // Replicated jobs are not lost (at-least-once).
    expect(ids.filter((id) => !handled.has(id))).toEqual([]);
    await Promise.all([long.handle?.release(), short.handle?.release(), heldShort.release()].map((p) => p?.catch(() => undefined)));
  }, 60_000);
});
