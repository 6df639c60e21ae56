import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { RedisLockMetricsModule } from 'nestjs-redis-lock/metrics';
import { Registry } from 'prom-client';
import { LeaderElection, OnOneInstance, RedisLockModule, type LeadershipHooks, type LockHandle } from '../../lib/index.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { deferred, waitFor, type Deferred } from '../support/timing.js';
import { UnhandledRejections } from '../support/unhandled-rejections.js';

async function value(registry: Registry, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = await registry.getSingleMetric(name)?.get();
  return metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
}

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

describe('RedisLockMetricsModule: leadership and @OnOneInstance leases', () => {
  const unhandled = new UnhandledRejections();
  let app: TestingModule;
  let registry: Registry;

  beforeAll(async () => {
    unhandled.start();
    registry = new Registry();
    app = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: uniquePrefix('sm'), isGlobal: true }),
        RedisLockMetricsModule.forRoot({ registry }),
      ],
      providers: [MetricsLeader, NightlyReport],
    }).compile();
    await app.init();
  });
  afterAll(async () => {
    await app.close();
    unhandled.stop();
    expect(unhandled.reasons).toEqual([]);
  });

  it('counts terms begun and ended, sets the leader gauge, and counts @OnOneInstance leases taken', async () => {
    await waitFor(async () => (await value(registry, 'redis_lock_leader', { key: 'metrics-leader' })) === 1, 10_000, 'leadership');
    expect(await value(registry, 'redis_lock_leadership_changes_total', { key: 'metrics-leader', change: 'acquired' })).toBe(1);

    await app.get(NightlyReport).run();
    expect(app.get(NightlyReport).runs).toBe(1);
    expect(await value(registry, 'redis_lock_one_instance_lease_changes_total', { key: 'metrics-report', change: 'acquired' })).toBe(1);
    expect(await value(registry, 'redis_lock_one_instance_skipped_total', { key: 'metrics-report', reason: 'still-running' })).toBeUndefined();

    // Calls made while a run goes on are skipped and counted.
    const report = app.get(NightlyReport);
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
    expect(await value(registry, 'redis_lock_one_instance_skipped_total', { key: 'metrics-report', reason: 'still-running' })).toBe(2);

    // lock.release() steps down: the term ends (counted, gauge 0) and the only instance campaigns again.
    const leader = app.get(MetricsLeader);
    await leader.lock!.release();
    await waitFor(async () => leader.lost === 1, 10_000, 'the lost hook');
    expect(await value(registry, 'redis_lock_leadership_changes_total', { key: 'metrics-leader', change: 'stepped-down' })).toBe(1);
    await waitFor(
      async () => (await value(registry, 'redis_lock_leadership_changes_total', { key: 'metrics-leader', change: 'acquired' })) === 2,
      10_000,
      'a second term',
    );
    expect(await value(registry, 'redis_lock_leader', { key: 'metrics-leader' })).toBe(1);
  });
});
