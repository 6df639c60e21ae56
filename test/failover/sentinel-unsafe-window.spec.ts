import { randomBytes } from 'node:crypto';
import { LockLostError, LockNotReplicatedError, LockService, type LockHandle, type RedisLockModuleOptions } from '../../lib/index.js';
import { sleep, waitFor } from '../support/timing.js';
import { createFailoverApp, rounded, THROUGH_FAILOVER, tryAcquireOnceReachable } from './support/failover-harness.js';
import { useSentinelTopology } from './support/use-sentinel-topology.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';

/**
 * Redis replicates asynchronously: a lock taken on a primary that dies before its replicas saw the
 * write is gone after the failover, and a second owner can take it while the first still believes
 * it holds it. `syncReplicas` closes that window for the locks it confirmed.
 *
 * Made deterministic by cutting replication before the fatal acquire: the replicas are frozen
 * (SIGSTOP, so they cannot reconnect) and the primary drops their links (CLIENT KILL TYPE replica);
 * whatever is written after that never reaches them. Then the primary is SIGKILLed and the replicas
 * thawed, and Sentinel promotes one of them.
 */
describe('Sentinel failover: the asynchronous-replication window, with and without syncReplicas', () => {
  const { apps, topology } = useSentinelTopology();

  /** Waits until the primary has both replica links online, then pauses (SIGSTOP) both replicas. */
  async function pauseBothReplicas() {
    const primary = await topology.primaryNode();
    const replicas = topology.nodes.filter((n) => n.port !== primary.port && !n.killed);
    expect(replicas).toHaveLength(2);
    // The sentinels' view lags: wait until the primary itself has both replica links online.
    await waitFor(
      async () => ((await topology.clientTo(primary.port).info('replication')).match(/^slave\d+:.*state=online/gm) ?? []).length === 2,
      30_000,
      'both replicas online on the primary',
    );
    for (const r of replicas) topology.pause(r.port);
    return { primary, replicas };
  }

  it('grants a lock twice when the primary dies before replicating it; a syncReplicas lock survives or is refused', async () => {
    const keyPrefix = `uw-${randomBytes(3).toString('hex')}`;
    // A 20 s lease, renewed every 6.7 s: the first renewal comes well after the failover, so the
    // stale holder cannot learn of its loss before the second owner is granted the lock.
    const options: RedisLockModuleOptions = { redis: { ...topology.redisOptions }, keyPrefix, lock: { leaseTime: 20_000 } };
    const a = await createFailoverApp(options);
    apps.push(a);
    const b = await createFailoverApp(options);
    apps.push(b);
    const [first, second] = [a.get(LockService), b.get(LockService)];

    // Confirmed by both replicas before acquire returns.
    const safe = await first.acquire('safe', { syncReplicas: { replicas: 2, timeout: 2_000 } });

    const { primary, replicas } = await pauseBothReplicas();
    let unsafeHandle: LockHandle | undefined;
    let refused: unknown;
    let killed: { port: number; killedAt: number };
    try {
      expect(await topology.clientTo(primary.port).call('CLIENT', 'KILL', 'TYPE', 'replica')).toBe(2);
      // From here on, writes stay on the primary.
      unsafeHandle = await first.acquire('unsafe');
      refused = await first.acquire('guarded', { syncReplicas: { replicas: 1, timeout: 300 } }).catch((e: unknown) => e);
      expect(await first.isLocked('guarded')).toBe(false);
    } finally {
      // Kill first, thaw after: the thawed replicas find no primary to catch up from.
      killed = await topology.killPrimary();
      for (const r of replicas) topology.resume(r.port);
    }
    const { port: oldPort, killedAt } = killed;
    const unsafe = unsafeHandle!;
    expect(refused).toBeInstanceOf(LockNotReplicatedError);
    expect(refused).toMatchObject({ code: 'LOCK_NOT_REPLICATED', replicas: 1, acknowledged: 0 });

    const promoted = await topology.waitForNewPrimary(oldPort);
    const promotedAfterMs = performance.now() - killedAt;

    // Without syncReplicas: the new primary never saw 'unsafe', so another owner gets it while the
    // first holder still believes it holds it. The fencing counter's step was lost too, but the
    // token's clock floor (Redis TIME) still makes the second owner's token larger: a fenced store
    // rejects the stale holder's writes.
    const stolen = await tryAcquireOnceReachable(second, 'unsafe');
    const stolenAfterMs = performance.now() - killedAt;
    expect(stolen).not.toBeNull();
    expect(unsafe.held).toBe(true);
    expect(unsafe.signal.aborted).toBe(false);
    expect(BigInt(stolen!.fencingToken)).toBeGreaterThan(BigInt(unsafe.fencingToken));

    // With syncReplicas: the promoted replica has the lock; nobody else can take it.
    expect(await topology.clientTo(promoted.port).exists(new RedisKeySpace(keyPrefix).lock('safe').owners)).toBe(1);
    expect(await second.tryAcquire('safe')).toBeNull();

    // The first holder of 'unsafe' learns it lost the lock at its next renewal, not before.
    await waitFor(() => unsafe.signal.aborted, 20_000, 'the stale holder to notice', THROUGH_FAILOVER);
    const unsafeLostAfterMs = performance.now() - killedAt;
    expect((unsafe.signal.reason as LockLostError).reason).toBe('not-owner');
    // ...while the confirmed lock keeps being renewed on the new primary.
    await sleep(500);
    expect(safe.held).toBe(true);
    expect(safe.signal.aborted).toBe(false);
    expect(await second.tryAcquire('safe')).toBeNull();

    console.log(
      `Sentinel unsafe-window measurements:\n${JSON.stringify(
        rounded({
          promotedAfterMs,
          unsafeSecondOwnerAfterMs: stolenAfterMs,
          unsafeSecondOwnerTokenLarger: BigInt(stolen!.fencingToken) > BigInt(unsafe.fencingToken),
          unsafeStaleHolderNoticedAfterMs: unsafeLostAfterMs,
          doubleGrantWindowMs: unsafeLostAfterMs - stolenAfterMs,
          syncedLockSurvived: safe.held,
          unconfirmedAcquireRefusedWith: (refused as LockNotReplicatedError).code,
        }),
        null,
        2,
      )}`,
    );
    await Promise.all([safe.release(), unsafe.release(), stolen!.release()]);
  }, 60_000);

  it('does not take a confirmation from the new primary when the old one dies during WAIT', async () => {
    // Back to two replicas: the node killed by the previous test rejoins.
    const dead = topology.nodes.find((n) => n.killed);
    if (dead) await topology.reviveAsReplica(dead.port);
    const keyPrefix = `uw-${randomBytes(3).toString('hex')}`;
    const a = await createFailoverApp({ redis: { ...topology.redisOptions }, keyPrefix, lock: { leaseTime: 20_000 } });
    apps.push(a);
    const locks = a.get(LockService);

    const { primary, replicas } = await pauseBothReplicas();
    let pending: Promise<unknown>;
    let killed: { port: number; killedAt: number };
    try {
      expect(await topology.clientTo(primary.port).call('CLIENT', 'KILL', 'TYPE', 'replica')).toBe(2);
      // The lock is taken on the primary only; WAIT blocks there, as no replica is connected.
      pending = locks.acquire('k', { syncReplicas: { replicas: 1, timeout: 9_000 } }).then(
        (handle) => ({ handle }),
        (error: unknown) => ({ error }),
      );
      await waitFor(
        async () => Number(/blocked_clients:(\d+)/.exec(await topology.clientTo(primary.port).info('clients'))?.[1]) > 0,
        5_000,
        'WAIT to block',
        THROUGH_FAILOVER,
      );
    } finally {
      killed = await topology.killPrimary();
      for (const r of replicas) topology.resume(r.port);
    }
    // ioredis sends the unanswered WAIT again to the promoted replica, where it would succeed as
    // soon as a replica connects (a fresh connection has written nothing to wait for).
    const outcome = (await pending) as { handle?: unknown; error?: unknown };
    const settledAfterMs = performance.now() - killed.killedAt;
    expect(outcome.error).toBeInstanceOf(LockNotReplicatedError);
    // Undone: the lock is free on the new primary.
    const again = await tryAcquireOnceReachable(locks, 'k');
    expect(again).not.toBeNull();
    await again!.release();
    console.log(
      `Primary killed during WAIT: the acquire failed with ${(outcome.error as LockNotReplicatedError).code} ` +
        `after ${Math.round(settledAfterMs)} ms (cause: ${String((outcome.error as Error).cause)})`,
    );
  }, 60_000);
});
