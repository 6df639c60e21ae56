import { Injectable } from '@nestjs/common';
import { LeaderElection, OnOneInstance, type LeadershipHooks, type LockHandle } from '../../lib/index.js';
import { deferred, waitFor, type Deferred } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { useMetricsApp } from './support/use-metrics-app.js';

@Injectable()
@LeaderElection('metrics-leader', { ttl: 5_000 })
class MetricsLeader implements LeadershipHooks {
  lock?: LockHandle;
  lost = 0;

  onLeadershipAcquired(lock: LockHandle): void {
    this.lock = lock;
  }

  onLeadershipLost(_lock: LockHandle): void {
    this.lost++;
  }
}

@Injectable()
class NightlyReport {
  runs = 0;
  gate?: Deferred<void>;

  @OnOneInstance({ key: 'metrics-report', ttl: 5_000 })
  async run(): Promise<void> {
    this.runs++;
    await this.gate?.promise;
  }
}

failOnUnhandledRejections();

describe('RedisLockMetricsModule: leadership and @OnOneInstance leases', () => {
  const metrics = useMetricsApp('sm', { providers: [MetricsLeader, NightlyReport] });

  it('counts terms begun and ended, sets the leader gauge, and counts @OnOneInstance leases taken', async () => {
    await waitFor(async () => (await metrics.value('redis_lock_leader', { key: 'metrics-leader' })) === 1, 10_000, 'leadership');
    expect(await metrics.value('redis_lock_leadership_changes_total', { key: 'metrics-leader', change: 'acquired' })).toBe(1);

    await metrics.get(NightlyReport).run();
    expect(metrics.get(NightlyReport).runs).toBe(1);
    expect(await metrics.value('redis_lock_one_instance_lease_changes_total', { key: 'metrics-report', change: 'acquired' })).toBe(1);
    const stillRunning = { key: 'metrics-report', reason: 'still-running' };
    expect(await metrics.value('redis_lock_one_instance_skipped_total', stillRunning)).toBeUndefined();

    // Calls made while a run goes on are skipped and counted.
    const report = metrics.get(NightlyReport);
    const gate = deferred();
    report.gate = gate;
    const longRun = report.run();
    await waitFor(() => report.runs === 2, 10_000, 'the second run to start');
    await report.run();
    await report.run();
    gate.resolve();
    await longRun;
    report.gate = undefined;
    expect(report.runs).toBe(2);
    expect(await metrics.value('redis_lock_one_instance_skipped_total', { key: 'metrics-report', reason: 'still-running' })).toBe(2);

    // lock.release() steps down: the term ends (counted, gauge 0) and the only instance campaigns again.
    const leader = metrics.get(MetricsLeader);
    await leader.lock!.release();
    await waitFor(async () => leader.lost === 1, 10_000, 'the lost hook');
    expect(await metrics.value('redis_lock_leadership_changes_total', { key: 'metrics-leader', change: 'stepped-down' })).toBe(1);
    await waitFor(
      async () => (await metrics.value('redis_lock_leadership_changes_total', { key: 'metrics-leader', change: 'acquired' })) === 2,
      10_000,
      'a second term',
    );
    expect(await metrics.value('redis_lock_leader', { key: 'metrics-leader' })).toBe(1);
  });
});
