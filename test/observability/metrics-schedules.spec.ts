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
        RedisLockMetricsModule.forRoot({ registry, topics: ['metrics.repeat'] }),
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
    // One stats call per topic serves both gauges of the scrape.
    expect(stats).toHaveBeenCalledTimes(1);
    expect(text).toContain('redis_lock_queue_schedules{topic="metrics.repeat"} 2');
    expect(text).toContain('redis_lock_queue_jobs{topic="metrics.repeat",state="scheduled"} 2');

    await queue.removeRepeat('metrics.repeat', 'nightly');
    expect(await value(registry, 'redis_lock_queue_schedules', { topic: 'metrics.repeat' })).toBe(1);
  });
});
