import { jest } from '@jest/globals';
import { Test, type TestingModule } from '@nestjs/testing';
import { RedisLockMetricsModule } from 'nestjs-redis-lock/metrics';
import { Registry } from 'prom-client';
import { DelayQueueService, RedisLockModule } from '../../lib/index.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';

async function value(registry: Registry, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = await registry.getSingleMetric(name)?.get();
  return metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
}

describe('RedisLockMetricsModule: repeatable schedules per topic', () => {
  let app: TestingModule;
  let registry: Registry;
  let queue: DelayQueueService;

  beforeAll(async () => {
    registry = new Registry();
    app = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: uniquePrefix('ms'), isGlobal: true }),
        RedisLockMetricsModule.forRoot({ registry, topics: ['metrics.repeat', 'metrics.groups'] }),
      ],
    }).compile();
    await app.init();
    queue = app.get(DelayQueueService);
  });
  afterAll(async () => {
    await app.close();
    jest.restoreAllMocks();
  });

  it('reports redis_lock_queue_schedules from the same stats read as redis_lock_queue_jobs, on each scrape', async () => {
    expect(await value(registry, 'redis_lock_queue_schedules', { topic: 'metrics.repeat' })).toBe(0);
    await queue.repeat('metrics.repeat', { every: 60_000 });
    await queue.repeat('metrics.repeat', { cron: '0 2 * * *' }, { id: 'nightly' });
    const stats = jest.spyOn(queue, 'stats');
    const text = await registry.metrics();
    // One stats call per topic serves every gauge of the scrape.
    expect(stats.mock.calls.filter(([topic]) => topic === 'metrics.repeat')).toHaveLength(1);
    expect(text).toContain('redis_lock_queue_schedules{topic="metrics.repeat"} 2');
    expect(text).toContain('redis_lock_queue_jobs{topic="metrics.repeat",state="scheduled"} 2');

    await queue.removeRepeat('metrics.repeat', 'nightly');
    expect(await value(registry, 'redis_lock_queue_schedules', { topic: 'metrics.repeat' })).toBe(1);
  });

  it('reports paused topics, jobs waiting for their group and busy groups, from the same read', async () => {
    await queue.scheduleMany('metrics.groups', [1, 2, 3].map((n) => ({ payload: n, group: 'g', delay: 60_000 })));
    await queue.pause('metrics.groups');
    const stats = jest.spyOn(queue, 'stats');
    stats.mockClear();
    const text = await registry.metrics();
    expect(stats.mock.calls.filter(([topic]) => topic === 'metrics.groups')).toHaveLength(1);
    expect(text).toContain('redis_lock_queue_paused{topic="metrics.groups"} 1');
    expect(text).toContain('redis_lock_queue_jobs{topic="metrics.groups",state="grouped"} 3');
    expect(text).toContain('redis_lock_queue_busy_groups{topic="metrics.groups"} 0');
    await queue.resume('metrics.groups');
    expect(await value(registry, 'redis_lock_queue_paused', { topic: 'metrics.groups' })).toBe(0);
  });
});
