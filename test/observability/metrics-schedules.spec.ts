import { jest } from '@jest/globals';
import { useMetricsApp } from './support/use-metrics-app.js';

describe('RedisLockMetricsModule: repeatable schedules per topic', () => {
  const metrics = useMetricsApp('ms', { metrics: { topics: ['metrics.repeat', 'metrics.groups'] } });
  afterAll(() => jest.restoreAllMocks());

  it('reports redis_lock_queue_schedules from the same stats read as redis_lock_queue_jobs, on each scrape', async () => {
    expect(await metrics.value('redis_lock_queue_schedules', { topic: 'metrics.repeat' })).toBe(0);
    await metrics.queue.repeat('metrics.repeat', { every: 60_000 });
    await metrics.queue.repeat('metrics.repeat', { cron: '0 2 * * *' }, { id: 'nightly' });
    const stats = jest.spyOn(metrics.queue, 'stats');
    const text = await metrics.registry.metrics();
    // One stats call per topic serves every gauge of the scrape.
    expect(stats.mock.calls.filter(([topic]) => topic === 'metrics.repeat')).toHaveLength(1);
    expect(text).toContain('redis_lock_queue_schedules{topic="metrics.repeat"} 2');
    expect(text).toContain('redis_lock_queue_jobs{topic="metrics.repeat",state="scheduled"} 2');

    await metrics.queue.removeRepeat('metrics.repeat', 'nightly');
    expect(await metrics.value('redis_lock_queue_schedules', { topic: 'metrics.repeat' })).toBe(1);
  });

  it('reports paused topics, jobs waiting for their group and busy groups, from the same read', async () => {
    await metrics.queue.scheduleMany(
      'metrics.groups',
      [1, 2, 3].map((n) => ({ payload: n, group: 'g', delay: 60_000 })),
    );
    await metrics.queue.pause('metrics.groups');
    const stats = jest.spyOn(metrics.queue, 'stats');
    stats.mockClear();
    const text = await metrics.registry.metrics();
    expect(stats.mock.calls.filter(([topic]) => topic === 'metrics.groups')).toHaveLength(1);
    expect(text).toContain('redis_lock_queue_paused{topic="metrics.groups"} 1');
    expect(text).toContain('redis_lock_queue_jobs{topic="metrics.groups",state="grouped"} 3');
    expect(text).toContain('redis_lock_queue_busy_groups{topic="metrics.groups"} 0');
    await metrics.queue.resume('metrics.groups');
    expect(await metrics.value('redis_lock_queue_paused', { topic: 'metrics.groups' })).toBe(0);
  });
});
