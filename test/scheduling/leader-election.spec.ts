import { Injectable, Scope } from '@nestjs/common';
import { InvalidOptionsError, LockLostError, RedisLockEvents, type LockHandle } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { LeaderElection } from '../../lib/decorators/leader-election.decorator.js';
import { LeaderElections } from '../../lib/scheduling/leader-elections.js';
import { LeadershipSteppedDownError } from '../../lib/core/errors/leadership-stepped-down.error.js';
import type { LeadershipHooks } from '../../lib/scheduling/leadership-hooks.interface.js';
import type { LeadershipAcquiredEvent, LeadershipLostEvent } from '../../lib/core/events/scheduling-events.js';
import { uniquePrefix } from '../support/test-app.js';
import { abortReason, waitFor } from '../support/timing.js';
import { createSchedulingApp, useSchedulingInstances } from './support/scheduling-app.js';

const TTL = 10_000;

@Injectable()
@LeaderElection('billing.leader', { ttl: TTL })
class BillingLeader implements LeadershipHooks {
  readonly acquired: LockHandle[] = [];
  readonly lost: Array<{ lock: LockHandle; abortedBefore: boolean; reason: unknown }> = [];

  onLeadershipAcquired(lock: LockHandle): void {
    this.acquired.push(lock);
  }

  onLeadershipLost(lock: LockHandle): void {
    this.lost.push({ lock, abortedBefore: lock.signal.aborted, reason: lock.signal.reason });
  }
}

describe('@LeaderElection', () => {
  const instances = useSchedulingInstances('leader');
  const { apps, redis } = instances;

  const start = (count: number) => instances.start([BillingLeader], count);
  const leader = (i: number) => apps[i].get(BillingLeader);
  const elections = (i: number) => apps[i].get(LeaderElections);

  it('elects one instance at bootstrap and hands it a lock whose signal is live', async () => {
    await start(3);
    expect(leader(0).acquired).toHaveLength(1);
    expect(leader(1).acquired).toHaveLength(0);
    expect(leader(2).acquired).toHaveLength(0);
    const [lock] = leader(0).acquired;
    expect(lock.key).toBe('billing.leader');
    expect(lock.held).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect(elections(0).isLeader('billing.leader')).toBe(true);
    expect(elections(1).status()).toEqual([{ key: 'billing.leader', provider: 'BillingLeader', ttl: TTL, leader: false, terms: 0 }]);
    expect(elections(0).status()[0]).toMatchObject({ leader: true, fencingToken: lock.fencingToken, terms: 1 });
  });

  it('reports since when this instance leads as a Date, like every other time of the API', async () => {
    const before = Date.now();
    await start(1);
    const { since } = elections(0).status()[0];
    expect(since).toBeInstanceOf(Date);
    expect(since!.getTime()).toBeGreaterThanOrEqual(before);
    expect(since!.getTime()).toBeLessThanOrEqual(Date.now());
  });

  it('renews the lease: the leader stays leader past its ttl', async () => {
    @Injectable()
    // 2 s, renewed every 667 ms: a 1 s lease was lost to an event-loop stall of a loaded CI machine
    // (watchdog.spec.ts); the wait below spans three leases, so only renewal keeps it.
    @LeaderElection('short.leader', { ttl: 2_000 })
    class ShortLeader implements LeadershipHooks {
      readonly acquired: LockHandle[] = [];
      onLeadershipAcquired(lock: LockHandle): void {
        this.acquired.push(lock);
      }
    }
    await instances.start([ShortLeader], 2);
    await new Promise((resolve) => setTimeout(resolve, 6_500));
    expect(apps[0].get(ShortLeader).acquired).toHaveLength(1);
    expect(apps[0].get(ShortLeader).acquired[0].held).toBe(true);
    expect(apps[1].get(ShortLeader).acquired).toHaveLength(0);
  });

  it(
    'steps down at once on a clean shutdown: the signal aborts, onLeadershipLost runs, another instance ' + 'leads well within ttl',
    async () => {
      await start(2);
      const [lock] = leader(0).acquired;
      const startedAt = performance.now();
      await apps[0].close();
      expect(lock.signal.aborted).toBe(true);
      expect(lock.signal.reason).toBeInstanceOf(LeadershipSteppedDownError);
      expect(leader(0).lost).toEqual([{ lock, abortedBefore: true, reason: lock.signal.reason }]);
      await waitFor(() => leader(1).acquired.length === 1, TTL / 2, 'the other instance to lead');
      // Woken by the release, not by the lease running out.
      expect(performance.now() - startedAt).toBeLessThan(TTL / 2);
      expect(BigInt(leader(1).acquired[0].fencingToken)).toBeGreaterThan(BigInt(lock.fencingToken));
    },
  );

  it('aborts the leader’s signal with LockLostError when its lease is lost, and a leader is elected again', async () => {
    @Injectable()
    @LeaderElection('lossy.leader', { ttl: 600 })
    class LossyLeader extends BillingLeader {}
    await instances.start([LossyLeader], 2);
    const first = apps[0].get(LossyLeader);
    const [lock] = first.acquired;
    await redis.del(new RedisKeySpace(instances.keyPrefix).lock('lossy.leader').owners);
    const reason = await abortReason(lock.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    await waitFor(() => first.lost.length === 1, 5_000, 'onLeadershipLost');
    expect(first.lost[0]).toEqual({ lock, abortedBefore: true, reason });
    const all = () => [...first.acquired, ...apps[1].get(LossyLeader).acquired];
    await waitFor(() => all().length === 2, 5_000, 'a new term');
    const next = all().find((l) => l !== lock)!;
    expect(next.held).toBe(true);
    expect(BigInt(next.fencingToken)).toBeGreaterThan(BigInt(lock.fencingToken));
  });

  it('steps down when the provider releases the lock, and campaigns again', async () => {
    await start(2);
    const [lock] = leader(0).acquired;
    await lock.release();
    expect(lock.signal.reason).toBeInstanceOf(LeadershipSteppedDownError);
    expect(leader(0).lost).toHaveLength(1);
    await waitFor(() => leader(0).acquired.length + leader(1).acquired.length === 2, 5_000, 'the next term');
  });

  it('emits leadership.acquired and leadership.lost on RedisLockEvents', async () => {
    await start(1);
    const seen: Array<LeadershipAcquiredEvent | LeadershipLostEvent> = [];
    const events = apps[0].get(RedisLockEvents) as unknown as NodeJS.EventEmitter;
    events.on('leadership.lost', (e: LeadershipLostEvent) => seen.push(e));
    await instances.start([BillingLeader]);
    (apps[1].get(RedisLockEvents) as unknown as NodeJS.EventEmitter).on('leadership.acquired', (e: LeadershipAcquiredEvent) =>
      seen.push(e),
    );
    const [lock] = leader(0).acquired;
    await apps[0].close();
    await waitFor(() => seen.length === 2, TTL / 2, 'both events');
    expect(seen).toEqual([
      {
        key: 'billing.leader',
        provider: 'BillingLeader',
        fencingToken: lock.fencingToken,
        reason: 'stepped-down',
        error: lock.signal.reason,
        heldMs: expect.any(Number),
      },
      { key: 'billing.leader', provider: 'BillingLeader', fencingToken: leader(1).acquired[0].fencingToken },
    ]);
  });

  it('refuses a class without hooks, a bad key or ttl when the class is defined', () => {
    expect(() => {
      @LeaderElection('x')
      class NoHooks {}
      return NoHooks;
    }).toThrow(/NoHooks has neither onLeadershipAcquired\(lock\) nor onLeadershipLost\(lock\)/);
    const withKey = (key: unknown, options?: object) => {
      @LeaderElection(key as string, options)
      class Hooked {
        onLeadershipLost(): void {}
      }
      return Hooked;
    };
    expect(() => withKey('')).toThrow(InvalidOptionsError);
    expect(() => withKey(42)).toThrow(/first argument, a string/);
    expect(() => withKey('k', { ttl: 0 })).toThrow(/`ttl`: got 0/);
    expect(() => withKey('k', { key: 'other' })).not.toThrow(); // the positional key wins
  });

  it('refuses at bootstrap a provider that is not a singleton, and two elections of one key', async () => {
    @Injectable({ scope: Scope.TRANSIENT })
    @LeaderElection('transient.leader')
    class TransientLeader {
      onLeadershipAcquired(): void {}
    }
    await expect(createSchedulingApp(uniquePrefix('leader-bad'), [TransientLeader])).rejects.toThrow(/TransientLeader is not a singleton/);

    @Injectable()
    @LeaderElection('billing.leader')
    class SecondBillingLeader {
      onLeadershipAcquired(): void {}
    }
    await expect(createSchedulingApp(uniquePrefix('leader-bad'), [BillingLeader, SecondBillingLeader])).rejects.toThrow(
      /BillingLeader and SecondBillingLeader both campaign for "billing.leader"/,
    );
  });
});
