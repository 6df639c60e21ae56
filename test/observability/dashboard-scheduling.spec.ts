import { Injectable, type INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { RedisLockDashboardModule } from 'nestjs-redis-lock/dashboard';
import type {
  DashboardSchedules,
  DashboardScheduling,
  DashboardTopics,
} from '../../lib/observability/dashboard/dashboard-api.interface.js';
import {
  DelayQueueService,
  LeaderElection,
  LeaderElections,
  LockService,
  OnOneInstance,
  RedisLockModule,
  type Consumer,
  type LeadershipHooks,
} from '../../lib/index.js';
import { callDashboard } from '../fixtures/dashboard-app.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { deferred, waitFor } from '../support/timing.js';

/** Long enough that an event loop stalled by a loaded machine does not end a lease by its ttl. */
const LEASE_TTL = 10_000;

/** Lets the spec hold a sweep running. */
let sweepGate = Promise.resolve();

@Injectable()
class Sweeper {
  @OnOneInstance({ key: 'dash.sweep', ttl: LEASE_TTL })
  async sweep(): Promise<string> {
    await sweepGate;
    return 'swept';
  }

  // A second method on the same lease: one row, both methods.
  @OnOneInstance({ key: 'dash.sweep', ttl: LEASE_TTL })
  async compact(): Promise<void> {}
}

@Injectable()
@LeaderElection('dash.leader', { ttl: LEASE_TTL })
class Relay implements LeadershipHooks {
  onLeadershipAcquired(): void {}
}

interface Instance {
  readonly app: INestApplication;
  readonly base: string;
  close(): Promise<void>;
}

/** One application instance (as one process of a service would be) with the dashboard, on a free port. */
async function startInstance(keyPrefix: string): Promise<Instance> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix, isGlobal: true }),
      RedisLockDashboardModule.forRoot({ path: '/dashboard' }),
    ],
    providers: [Sweeper, Relay],
  }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({ logger: false });
  await app.listen(0, '127.0.0.1');
  const base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return { app, base, close: () => app.close() };
}

describe('RedisLockDashboardModule: schedules, @OnOneInstance leases and leader elections (JSON API)', () => {
  const keyPrefix = uniquePrefix('dsch');
  let first: Instance;
  let second: Instance;
  const consumers: Consumer[] = [];
  const api = async <T>(instance: Instance, path: string): Promise<{ status: number; body: T }> =>
    callDashboard(instance.base, 'GET', `/dashboard/api${path}`);
  const clientIdOf = (instance: Instance) => instance.app.get(LockService).clientId;

  beforeAll(async () => {
    // The first instance campaigns first: it leads.
    first = await startInstance(keyPrefix);
    second = await startInstance(keyPrefix);
  });
  afterAll(async () => {
    await Promise.all(consumers.map((consumer) => consumer.close()));
    await second?.close();
    await first?.close();
  });

  it("lists a topic's schedules with their schedule text parts, next and last run, and catch-up; stats count them", async () => {
    const queue = first.app.get(DelayQueueService);
    await queue.repeat('dash.repeat', { every: 60_000 });
    await queue.repeat('dash.repeat', { cron: '0 2 * * *', timeZone: 'Europe/Warsaw' }, { id: 'nightly', catchUp: 'all' });

    const { status, body } = await api<DashboardSchedules>(second, '/topics/dash.repeat/schedules');
    expect(status).toBe(200);
    expect(body.topic).toBe('dash.repeat');
    expect(body.schedules).toHaveLength(2);
    const every = body.schedules.find((s) => s.id === 'dash.repeat')!;
    expect(every).toEqual({ id: 'dash.repeat', schedule: { every: 60_000 }, catchUp: 'latest', nextRunAt: expect.any(Number) });
    expect(every.nextRunAt % 60_000).toBe(0);
    expect(every.nextRunAt).toBeGreaterThan(body.now - 60_000);
    expect(body.schedules.find((s) => s.id === 'nightly')).toMatchObject({
      schedule: { cron: '0 2 * * *', timeZone: 'Europe/Warsaw' },
      catchUp: 'all',
    });
    // Soonest tick first.
    expect(body.schedules[0].nextRunAt).toBeLessThanOrEqual(body.schedules[1].nextRunAt);

    const topics = (await api<DashboardTopics>(second, '/topics')).body;
    expect(topics.topics.find((t) => t.topic === 'dash.repeat')).toMatchObject({
      scheduled: 2,
      schedules: 2,
      paused: false,
      grouped: 0,
      busyGroups: 0,
    });

    expect((await api(second, '/topics/dash.none/schedules')).body).toMatchObject({ topic: 'dash.none', schedules: [] });
    expect((await api(second, `/topics/${encodeURIComponent('bad{topic}')}/schedules`)).status).toBe(400);
  });

  it('shows the last run of a schedule once a consumer has run a tick', async () => {
    const queue = first.app.get(DelayQueueService);
    await queue.repeat('dash.beat', { every: 300 });
    consumers.push(queue.consume('dash.beat', () => undefined));
    const schedule = await waitFor(
      async () =>
        (await api<DashboardSchedules>(second, '/topics/dash.beat/schedules')).body.schedules.find((s) => s.lastRunAt !== undefined),
      20_000,
      'a last run',
    );
    expect(schedule.lastRunAt! % 300).toBe(0);
    expect(schedule.nextRunAt).toBeGreaterThan(schedule.lastRunAt!);
  });

  it('shows every @OnOneInstance lease before its first call, nobody owning it', async () => {
    const { status, body } = await api<DashboardScheduling>(second, '/scheduling');
    expect(status).toBe(200);
    expect(body).toMatchObject({ available: true, clientId: clientIdOf(second) });
    expect(body).not.toHaveProperty('truncated');
    expect(body.oneInstance).toEqual([
      {
        key: 'dash.sweep',
        ttl: LEASE_TTL,
        methods: ['Sweeper.compact()', 'Sweeper.sweep()'],
        heldHere: false,
        redis: { state: 'free', owners: [], fencingToken: null, leaseMs: null },
        running: false,
      },
    ]);
  });

  it('shows the owner of a lease on the owner and on an instance that does not own it, with the run in progress', async () => {
    const gate = deferred();
    sweepGate = gate.promise;
    const run = first.app.get(Sweeper).sweep();
    try {
      const owner = await waitFor(
        async () => {
          const { body } = await api<DashboardScheduling>(first, '/scheduling');
          return body.oneInstance[0].heldHere && body.oneInstance[0].running ? body : undefined;
        },
        10_000,
        'the lease and its run on the first instance',
      );
      const lease = owner.oneInstance[0];
      expect(lease.redis).toEqual({
        state: 'held',
        owners: [expect.stringMatching(new RegExp(`^${clientIdOf(first)}:`))],
        fencingToken: lease.fencingToken,
        leaseMs: expect.any(Number),
      });
      expect(lease.redis.leaseMs).toBeGreaterThan(0);
      expect(lease.redis.leaseMs).toBeLessThanOrEqual(LEASE_TTL);
      expect(lease.since).toEqual(expect.any(Number));

      // The other instance knows only what Redis says: someone else holds it, and for how long.
      const other = (await api<DashboardScheduling>(second, '/scheduling')).body.oneInstance[0];
      expect(other).toMatchObject({ key: 'dash.sweep', heldHere: false, running: true });
      expect(other.fencingToken).toBeUndefined();
      expect(other.redis).toMatchObject({ state: 'held', owners: lease.redis.owners, fencingToken: lease.fencingToken });
      expect(other.redis.leaseMs).toBeGreaterThan(0);
      // The second instance's own call is skipped: the lease is the first's.
      expect(await second.app.get(Sweeper).sweep()).toBeUndefined();
    } finally {
      gate.resolve();
    }
    expect(await run).toBe('swept');
    expect((await api<DashboardScheduling>(second, '/scheduling')).body.oneInstance[0]).toMatchObject({
      running: false,
      redis: { state: 'held' },
    });
  });

  it("keeps the new routes behind the dashboard's checks: another site's page cannot read them", async () => {
    for (const path of ['/scheduling', '/topics/dash.repeat/schedules']) {
      const refused = await callDashboard(second.base, 'GET', `/dashboard/api${path}`, { origin: 'https://evil.example' });
      expect(refused).toMatchObject({ status: 403, body: { code: 'DASHBOARD_CROSS_ORIGIN' } });
    }
  });

  it('shows each leader election: leader here or not, fencing token, terms, and the lease left in Redis', async () => {
    const leading = (await api<DashboardScheduling>(first, '/scheduling')).body;
    expect(leading.leaders).toEqual([
      {
        key: 'dash.leader',
        provider: 'Relay',
        ttl: LEASE_TTL,
        leader: true,
        fencingToken: expect.any(String),
        since: expect.any(Number),
        terms: expect.any(Number),
        redis: {
          state: 'held',
          owners: [expect.stringMatching(new RegExp(`^${clientIdOf(first)}:`))],
          fencingToken: expect.any(String),
          leaseMs: expect.any(Number),
        },
      },
    ]);
    const [election] = leading.leaders;
    expect(election.redis.fencingToken).toBe(election.fencingToken);
    // The terms this instance counted (1, or more if a stall longer than the unreachable bound made it
    // step down and win again on a loaded host).
    const own = first.app
      .get(LeaderElections)
      .status()
      .find((status) => status.key === 'dash.leader');
    expect(election.terms).toBe(own?.terms);
    expect(election.terms).toBeGreaterThanOrEqual(1);

    const following = (await api<DashboardScheduling>(second, '/scheduling')).body.leaders;
    expect(following).toEqual([
      {
        key: 'dash.leader',
        provider: 'Relay',
        ttl: LEASE_TTL,
        leader: false,
        terms: 0,
        redis: { state: 'held', owners: election.redis.owners, fencingToken: election.fencingToken, leaseMs: expect.any(Number) },
      },
    ]);
    expect(following[0].redis.leaseMs).toBeGreaterThan(0);
  });
});
