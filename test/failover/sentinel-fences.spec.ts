import { randomBytes } from 'node:crypto';
import { LockService, type LockHandle } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { sleep } from '../support/timing.js';
import { FenceHistory, type GrantKind } from '../lock/fence-history.js';
import { createFailoverApp } from './support/failover-harness.js';
import { useSentinelTopology } from './support/use-sentinel-topology.js';

/**
 * A Sentinel failover to a replica that missed the last grants, without `syncReplicas`: the promoted
 * replica's fencing counters are behind the tokens the dead primary handed out last. Every token
 * handed out after the failover, for every lock kind, must still be greater than every token handed
 * out before it (the clock floor: the promoted replica's Redis TIME is past them).
 *
 * Replication is cut as in sentinel-unsafe-window.spec.ts: the replicas are frozen (SIGSTOP) and the
 * primary drops their links, so the grants made after that stay on the primary, which is then killed.
 */
describe('Sentinel failover to a lagging replica: fencing tokens never go back', () => {
  const { apps, topology } = useSentinelTopology();

  it('every lock kind: each token after the failover is greater than every token before it', async () => {
    const keyPrefix = `sf-${randomBytes(3).toString('hex')}`;
    const keys = new RedisKeySpace(keyPrefix);
    for (let i = 0; i < 2; i++) {
      apps.push(
        await createFailoverApp({ redis: { ...topology.redisOptions }, keyPrefix, lock: { leaseTime: 5_000, waitTimeout: 10_000 } }),
      );
    }
    const [a, b] = apps.slice(-2).map((app) => app.get(LockService));
    const history = new FenceHistory();

    /** One grant of each kind per kind entry, released at once; `fence` names the counter it steps. */
    type Kind = { name: string; fence: string; kind: GrantKind; take: (locks: LockService) => Promise<LockHandle> };
    const kinds: Kind[] = [
      { name: 'plain', fence: keys.lock('plain').fence, kind: 'fresh', take: (l) => l.acquire('plain') },
      { name: 'fair', fence: keys.lock('fair').fence, kind: 'fresh', take: (l) => l.acquire('fair', { fair: true }) },
      { name: 'multi', fence: keys.lock('m1').fence, kind: 'fresh', take: (l) => l.acquire(['m1', 'm2']) },
      // Sequential: each read starts a read phase of its own, so it is a fresh grant too.
      { name: 'read', fence: keys.lock('rw').fence, kind: 'fresh', take: (l) => l.readWrite('rw').read() },
      { name: 'write', fence: keys.lock('rw').fence, kind: 'fresh', take: (l) => l.readWrite('rw').write() },
      { name: 'permit', fence: keys.semaphore('sem').fence, kind: 'fresh', take: (l) => l.semaphore('sem', 2).acquire() },
    ];
    const round = async (label: string) => {
      for (const [i, locks] of [a, b, a].entries()) {
        for (const kind of kinds) {
          const handle = await history.take(`${label} ${kind.name} #${i}`, kind.kind, () => kind.take(locks));
          await handle.release();
        }
        // A re-entry: the section's own token again.
        const askedAt = performance.now();
        await locks.using('reentrant', async (outer) => {
          history.record('reentrant', outer.fencingToken, 'fresh', askedAt, performance.now(), `${label} section #${i}`);
          const inner = await history.take(`${label} re-entry #${i}`, 'joined', () => locks.acquire('reentrant'));
          await inner.release();
        });
      }
    };

    // Replicated: both replicas confirmed every write of this round.
    history.phase = 'replicated';
    await round('replicated');
    const primary = await topology.primaryNode();
    expect(await topology.clientTo(primary.port).call('WAIT', '2', '5000')).toBe(2);
    const counters = [
      ...['plain', 'fair', 'm1', 'm2', 'rw', 'reentrant'].map((key) => ({ key, fence: keys.lock(key).fence })),
      { key: 'sem', fence: keys.semaphore('sem').fence },
    ];
    const replicatedCounters = await Promise.all(counters.map(({ fence }) => topology.clientTo(primary.port).get(fence)));

    // Cut: from here on, grants stay on the primary.
    const replicas = topology.nodes.filter((n) => n.port !== primary.port && !n.killed);
    expect(replicas).toHaveLength(2);
    for (const r of replicas) topology.pause(r.port);
    let killed: { port: number; killedAt: number };
    try {
      expect(await topology.clientTo(primary.port).call('CLIENT', 'KILL', 'TYPE', 'replica')).toBe(2);
      history.phase = 'primary only';
      await round('primary only');
    } finally {
      killed = await topology.killPrimary();
      for (const r of replicas) topology.resume(r.port);
    }
    const before = [...history.grants];
    const promoted = await topology.waitForNewPrimary(killed.port);

    // The promoted replica lags: its counters are those of the replicated round, below the last tokens.
    const promotedCounters = await Promise.all(counters.map(({ fence }) => topology.clientTo(promoted.port).get(fence)));
    expect(promotedCounters).toEqual(replicatedCounters);
    const lastBefore = (key: string) => before.filter((g) => g.key === key).reduce((m, g) => (g.token > m ? g.token : m), 0n);
    const lagging = counters.filter(({ key }, i) => BigInt(promotedCounters[i] ?? '0') < lastBefore(key));
    expect(lagging.map(({ key }) => key)).toEqual(counters.map(({ key }) => key));

    // After: every kind again, through the new primary (the first calls wait for the clients to reconnect).
    history.phase = 'after failover';
    const deadline = performance.now() + 30_000;
    for (;;) {
      try {
        await round('after failover');
        break;
      } catch (error) {
        if (performance.now() > deadline) throw error;
        await sleep(100);
      }
    }
    const after = history.grants.filter((g) => g.phase === 'after failover');
    const notAbove = after
      .filter((g) => g.token <= lastBefore(g.key))
      .map((g) => `${g.label}: ${g.key} ${g.token} <= ${lastBefore(g.key)}`);
    console.log(
      `Sentinel failover to a lagging replica: ${before.length} tokens before (` +
        `${before.filter((g) => g.phase === 'primary only').length} ` +
        `never replicated), ${after.length} after; tokens after not above every earlier one of their key: ${notAbove.length}`,
    );
    expect(notAbove).toEqual([]);
    expect(history.violations()).toEqual([]);
    expect(after.length).toBeGreaterThanOrEqual(3 * (kinds.length + 2));
  }, 90_000);
});
