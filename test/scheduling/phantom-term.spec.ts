import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { LeaderElection, RedisLockEvents, type LeadershipHooks, type LockHandle } from '../../lib/index.js';
import type { LeadershipLostEvent } from '../../lib/core/events/scheduling-events.js';
import { createRedisLockTestingModule } from '../../lib/testing/index.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { initOrCloseConnections, testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { deferred, sleep, waitFor } from '../support/timing.js';
import { closeSchedulingApps } from './support/scheduling-app.js';

/**
 * 1 s: a loaded CI machine's event-loop stalls (a few hundred ms) do not end a kept lease. The
 * campaigner's own `unreachableTimeout` is raised past the stall below, so its try stays in flight
 * and is granted when the link heals instead of failing at the 2 s bound.
 */
const TTL = 1_000;

@Injectable()
@LeaderElection('phantom.leader', { ttl: TTL })
class PhantomLeader implements LeadershipHooks {
  readonly terms: Array<{ token: string; heldAtStart: boolean }> = [];
  readonly first = deferred();
  onLeadershipAcquired(lock: LockHandle): void {
    this.terms.push({ token: lock.fencingToken, heldAtStart: lock.held });
    this.first.resolve();
  }
}

/**
 * A campaigning instance whose try for the leader lock is answered only after the lease it would
 * start is already over by its own clock (its link stalled, then healed) must not report that term:
 * "became leader", then at once "leadership lost: its lease ended before it was extended", then
 * "became leader" again is a phantom term whose hooks ran for nothing (issue 23, defect 12).
 */
describe('@LeaderElection: no phantom term when a campaign’s grant arrives after its lease ended', () => {
  let proxy: FaultProxy;
  const apps: TestingModule[] = [];

  beforeAll(async () => {
    proxy = await FaultProxy.start({ port: Number(new URL(testRedisUrl()).port) });
  });
  afterAll(async () => {
    await closeSchedulingApps(apps);
    await proxy.stop();
  });

  const start = async (redis: string, keyPrefix: string) => {
    const app = await initOrCloseConnections(
      await createRedisLockTestingModule({
        redis,
        redisLock: { keyPrefix, unreachableTimeout: 10 * TTL },
        providers: [PhantomLeader],
      }).compile(),
    );
    apps.push(app);
    return app;
  };

  it('reports only terms whose lease was live when they began, and no lease lost for them', async () => {
    const keyPrefix = uniquePrefix('phantom');
    const leader = await start(testRedisUrl(), keyPrefix);
    await leader.get(PhantomLeader).first.promise;
    const campaigner = await start(proxy.url, keyPrefix);
    const lost: LeadershipLostEvent[] = [];
    campaigner.get(RedisLockEvents).on('leadership.lost', (event) => lost.push(event));
    const terms = campaigner.get(PhantomLeader).terms;
    expect(terms).toEqual([]);

    // The campaigner's link stalls; the leader steps down; the campaigner's next try, sent into the
    // stall, is granted by Redis only when the link heals, after more than a lease.
    proxy.blackhole();
    await leader.close();
    await sleep(3 * TTL);
    proxy.heal();

    await waitFor(() => terms.length > 0 && campaigner.get(PhantomLeader).terms.length > 0, 20_000, 'the campaigner to lead');
    // A real term stays: its lease is renewed.
    await sleep(3 * TTL);
    expect({ terms, lost }).toEqual({ terms: [{ token: expect.any(String), heldAtStart: true }], lost: [] });
  });
});
