import { DelayQueueService, JobRateLimitedError, RedisLockEvents, type JobRateLimitedEvent } from '../../lib/index.js';
import type { DashboardJobDetail, DashboardJobList, DashboardTopics } from '../../lib/observability/dashboard/dashboard-api.interface.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { shardTopicName } from '../../lib/core/keys/topic-name.js';
import { callDashboard as call, startDashboardApp, type DashboardTestApp } from '../fixtures/dashboard-app.js';
import { rawRedis } from '../support/test-app.js';
import { uniqueClusterPrefix, useSharedTestCluster } from '../support/redis-cluster.js';
import { deferred, within } from '../support/timing.js';

/** The dashboard shows a job's priority and dedupe, and a topic whose claims a `JobRateLimitedError` holds. */
describe('RedisLockDashboardModule: priorities, dedupe and rate-limited topics', () => {
  let t: DashboardTestApp;
  let queue: DelayQueueService;
  const api = async <T>(path: string) => (await call(t.base, 'GET', `/ops/locks/api${path}`)).body as T;
  /** The topic names of `topic`'s shards (itself when not sharded). */
  const shardsOf = (topic: string) => (topic === 'dash.rl.sharded' ? [0, 1, 2].map((i) => shardTopicName(topic, i)) : [topic]);
  const topicRow = async (name: string) => (await api<DashboardTopics>('/topics')).topics.find((x) => x.topic === name);

  beforeAll(async () => {
    t = await startDashboardApp(
      { path: '/ops/locks', history: { sampleMs: 60_000 } },
      { handlers: false, shards: { 'dash.rl.sharded': 3 } },
    );
    queue = t.app.get(DelayQueueService);
  });
  afterAll(() => t?.close());

  it('lists and shows a job with its priority and its dedupe; a job with neither carries no such field', async () => {
    const later = { delay: 3_600_000 };
    await queue.schedule('dash.prio', { n: 1 }, { id: 'urgent', priority: 3, ...later });
    await queue.schedule('dash.prio', { n: 2 }, { id: 'plain', ...later });
    await queue.schedule('dash.prio', { n: 3 }, { dedupe: { key: 'product:7', ttl: 60_000 }, ...later });
    await queue.schedule('dash.prio', { n: 4 }, { dedupe: { key: 'chat:1', ttl: 3_600_000, mode: 'debounce' }, priority: 1 });

    const scheduled = await api<DashboardJobList>('/topics/dash.prio/jobs?state=scheduled');
    expect(scheduled.total).toBe(4);
    const byPayload = (n: number) => scheduled.jobs.find((j) => j.payloadPreview === `{"n":${n}}`)!;
    expect(byPayload(1)).toMatchObject({ id: 'urgent', priority: 3 });
    expect(byPayload(1)).not.toHaveProperty('dedupe');
    expect(byPayload(2)).not.toHaveProperty('priority');
    expect(byPayload(2)).not.toHaveProperty('dedupe');
    expect(byPayload(3).dedupe).toEqual({ key: 'product:7', ttl: 60_000, mode: 'throttle' });
    expect(byPayload(4)).toMatchObject({ priority: 1, dedupe: { key: 'chat:1', ttl: 3_600_000, mode: 'debounce' } });

    expect(await api<DashboardJobDetail>('/topics/dash.prio/jobs/urgent')).toMatchObject({ id: 'urgent', priority: 3, payload: { n: 1 } });
    const plain = await api<DashboardJobDetail>('/topics/dash.prio/jobs/plain');
    expect(plain).not.toHaveProperty('priority');
    expect(plain).not.toHaveProperty('dedupe');
    const debounced = await api<DashboardJobDetail>(`/topics/dash.prio/jobs/${encodeURIComponent(byPayload(4).id)}`);
    expect(debounced).toMatchObject({ priority: 1, dedupe: { key: 'chat:1', ttl: 3_600_000, mode: 'debounce' }, payload: { n: 4 } });
  });

  it.each([
    ['a topic', 'dash.rl'],
    ['a sharded topic (every shard blocked)', 'dash.rl.sharded'],
  ])('shows %s rate limited until the end of its block, then without the block once it has passed', async (_what, topic) => {
    expect(await topicRow(topic)).toBeUndefined();
    const limited = deferred<JobRateLimitedEvent>();
    const onLimited = (event: JobRateLimitedEvent) => event.topic === topic && limited.resolve(event);
    const events = t.app.get(RedisLockEvents);
    events.on('job.rate-limited', onLimited);
    const consumer = queue.consume(topic, () => {
      throw new JobRateLimitedError(3_600_000);
    });
    try {
      await queue.schedule(topic, { call: 'api' }, { id: 'limited' });
      const event = await within(limited.promise, 20_000, 'the rate-limited run');
      const row = await topicRow(topic);
      expect(row).toMatchObject({ rateLimitedUntil: event.blockedUntilMs, active: 0, dead: 0 });
      expect(row!.scheduled + row!.due).toBe(1);
      expect((await queue.get(topic, 'limited'))?.attempts).toBe(0);
      const redis = rawRedis();
      try {
        const ends = await Promise.all(shardsOf(topic).map((shard) => redis.get(new RedisKeySpace(t.keyPrefix).topic(shard).blocked)));
        expect(ends).toEqual(shardsOf(topic).map(() => String(event.blockedUntilMs)));
      } finally {
        await redis.quit();
      }
    } finally {
      events.off('job.rate-limited', onLimited);
      await consumer.close();
    }
    // A block whose end has passed (as its key's expiry would leave it, were it still there) shows nothing.
    const redis = rawRedis();
    try {
      const blocked = shardsOf(topic).map((shard) => new RedisKeySpace(t.keyPrefix).topic(shard).blocked);
      for (const key of blocked) await redis.set(key, String(Date.now() - 60_000));
      expect(await topicRow(topic)).not.toHaveProperty('rateLimitedUntil');
    } finally {
      await redis.quit();
    }
  });
});

/** The same on a Redis Cluster: a sharded topic's shards sit in different slots, each read by its own script call. */
describe('RedisLockDashboardModule on a Redis Cluster: a rate-limited sharded topic and a prioritised job', () => {
  let t: DashboardTestApp;
  // Declared before the cluster's hooks: the app lets go of the cluster before the cluster stops.
  afterAll(() => t?.close());
  const cluster = useSharedTestCluster();

  beforeAll(async () => {
    t = await startDashboardApp(
      { path: '/ops/locks', history: { sampleMs: 60_000 }, topics: ['cluster.rl'] },
      { handlers: false, redis: { cluster: cluster.nodes() }, keyPrefix: uniqueClusterPrefix('dash'), shards: { 'cluster.rl': 3 } },
    );
  });

  it('shows the block of every shard and a job with its priority and dedupe', async () => {
    const queue = t.app.get(DelayQueueService);
    const api = async <T>(path: string) => (await call(t.base, 'GET', `/ops/locks/api${path}`)).body as T;
    await queue.schedule('cluster.rl', 'waits', { priority: 4, dedupe: { key: 'k:1', ttl: 5_000 }, delay: 3_600_000 });
    const limited = deferred<JobRateLimitedEvent>();
    t.app.get(RedisLockEvents).on('job.rate-limited', (event) => limited.resolve(event));
    const consumer = queue.consume('cluster.rl', () => {
      throw new JobRateLimitedError(3_600_000);
    });
    try {
      await queue.schedule('cluster.rl', 'limited', { id: 'limited' });
      const event = await within(limited.promise, 20_000, 'the rate-limited run');
      const topics = await api<DashboardTopics>('/topics');
      expect(topics.errors).toEqual([]);
      expect(topics.topics).toEqual([expect.objectContaining({ topic: 'cluster.rl', rateLimitedUntil: event.blockedUntilMs })]);
    } finally {
      await consumer.close();
    }
    const scheduled = await api<DashboardJobList>('/topics/cluster.rl/jobs?state=scheduled');
    expect(scheduled.jobs.find((j) => j.payloadPreview === '"waits"')).toMatchObject({
      priority: 4,
      dedupe: { key: 'k:1', ttl: 5_000, mode: 'throttle' },
    });
  });
});
