import { jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RedisLockMetrics, RedisLockMetricsModule } from 'nestjs-redis-lock/metrics';
import { Registry } from 'prom-client';
import { LockAcquireTimeoutError, RedisLockEvents, RedisLockModule, WithLock } from '../../lib/index.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { useMetricsApp } from './support/use-metrics-app.js';

@Injectable()
class InvoiceService {
  @WithLock('invoice:<0>')
  async close(_invoiceId: string): Promise<void> {}
}

failOnUnhandledRejections();

describe('RedisLockMetricsModule', () => {
  beforeAll(() => muteNestLogger('warn', 'error'));
  const metrics = useMetricsApp('m', {
    redisLock: { delayQueue: { maxAttempts: 1 } },
    metrics: { topics: ['idle.topic'], maxKeyPatterns: 5 },
    providers: [InvoiceService],
  });
  const { registry } = metrics;
  afterAll(() => jest.restoreAllMocks());

  it('counts acquisitions, timeouts and hold times by key pattern, never by raw key', async () => {
    for (const id of [1, 2, 3]) await metrics.locks.using(`order:${id}`, () => sleep(20));
    const holder = await metrics.locks.acquire('order:9');
    await expect(metrics.locks.acquire('order:9', { waitTimeout: 50 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    await holder.release();

    expect(await metrics.value('redis_lock_lock_acquisitions_total', { key_pattern: 'order:*' })).toBe(4);
    expect(await metrics.value('redis_lock_lock_timeouts_total', { key_pattern: 'order:*' })).toBe(1);
    const hold = await registry.getSingleMetric('redis_lock_lock_hold_seconds')!.get();
    const count = hold.values.find(
      (v) => (v as { metricName?: string }).metricName === 'redis_lock_lock_hold_seconds_count' && v.labels.key_pattern === 'order:*',
    );
    expect(count?.value).toBe(4);
    const sum = hold.values.find(
      (v) => (v as { metricName?: string }).metricName === 'redis_lock_lock_hold_seconds_sum' && v.labels.key_pattern === 'order:*',
    );
    expect(sum!.value).toBeGreaterThanOrEqual(0.05);
    const text = await registry.metrics();
    expect(text).toContain('redis_lock_lock_wait_seconds_bucket');
    expect(text).not.toMatch(/order:\d/);
  });

  it("labels @WithLock's locks by the decorator's template, and others by the caller's keyPattern", async () => {
    const invoices = metrics.get(InvoiceService);
    await invoices.close('inv-7f3a'); // the default classifier would not generalise this id
    await invoices.close('inv-aa01');
    await metrics.locks.using('sku:blue-shirt', () => undefined, { keyPattern: 'sku:<sku>' });

    expect(await metrics.value('redis_lock_lock_acquisitions_total', { key_pattern: 'invoice:<0>' })).toBe(2);
    expect(await metrics.value('redis_lock_lock_acquisitions_total', { key_pattern: 'sku:<sku>' })).toBe(1);
    const holds = (await registry.getSingleMetric('redis_lock_lock_hold_seconds')!.get()).values;
    expect(holds.some((v) => v.labels.key_pattern === 'invoice:<0>')).toBe(true);
    expect(await registry.metrics()).not.toMatch(/inv-|blue-shirt/);
  });

  it('caps the number of key patterns, counting the rest as "other"', async () => {
    // Keys without ':' are kept whole (folded): free text there is what the cap is for.
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) await (await metrics.locks.acquire(`free-text-${name}`)).release();
    const values = (await registry.getSingleMetric('redis_lock_lock_acquisitions_total')!.get()).values;
    expect(values.length).toBeLessThanOrEqual(6);
    expect(values.find((v) => v.labels.key_pattern === 'other')?.value).toBeGreaterThan(0);
  });

  it('measures job lateness and run time, counts outcomes, and reads queue depths on scrape', async () => {
    let runs = 0;
    const consumer = metrics.queue.consume('metrics.jobs', async (payload: { fail: boolean }) => {
      runs++;
      await sleep(10);
      if (payload.fail) throw new Error('no');
    });
    try {
      await metrics.queue.schedule('metrics.jobs', { fail: false });
      await metrics.queue.schedule('metrics.jobs', { fail: true });
      await metrics.queue.schedule('metrics.jobs', { fail: false }, { delay: 60_000 });
      const jobs = (outcome: string) => metrics.value('redis_lock_jobs_total', { topic: 'metrics.jobs', outcome });
      await waitFor(async () => (await jobs('dead')) === 1, 10_000, 'a dead job');
      await waitFor(async () => (await jobs('succeeded')) === 1, 10_000, 'a success');
    } finally {
      await consumer.close();
    }
    expect(runs).toBe(2);
    expect(await metrics.value('redis_lock_jobs_total', { topic: 'metrics.jobs', outcome: 'scheduled' })).toBe(3);
    expect(await metrics.value('redis_lock_jobs_total', { topic: 'metrics.jobs', outcome: 'failed' })).toBe(1);
    const lateness = (await registry.getSingleMetric('redis_lock_job_lateness_seconds')!.get()).values;
    expect(
      lateness.find((v) => (v as { metricName?: string }).metricName?.endsWith('_count') && v.labels.topic === 'metrics.jobs')?.value,
    ).toBe(2);
    const run = (await registry.getSingleMetric('redis_lock_job_run_seconds')!.get()).values;
    expect(run.find((v) => (v as { metricName?: string }).metricName?.endsWith('_count') && v.labels.outcome === 'failed')?.value).toBe(1);

    const depth = (state: string, topic = 'metrics.jobs') => metrics.value('redis_lock_queue_jobs', { topic, state });
    expect(await depth('scheduled')).toBe(1);
    expect(await depth('dead')).toBe(1);
    expect(await depth('due')).toBe(0);
    expect(await depth('active')).toBe(0);
    // A configured topic is reported before it has seen any job.
    expect(await depth('due', 'idle.topic')).toBe(0);
  });

  it('counts created jobs as "scheduled", a duplicate id as "duplicate" and a replace as "replaced"', async () => {
    const topic = 'metrics.duplicates';
    const count = (outcome: string) => metrics.value('redis_lock_jobs_total', { topic, outcome });
    expect((await metrics.queue.scheduleWithResult(topic, { n: 1 }, { id: 'once', delay: 60_000 })).status).toBe('created');
    expect((await metrics.queue.scheduleWithResult(topic, { n: 2 }, { id: 'once', delay: 60_000 })).status).toBe('existing');
    expect(await metrics.queue.schedule(topic, { n: 3 }, { id: 'once', delay: 60_000 })).toBe('once');
    await metrics.queue.scheduleMany(topic, [
      { payload: { n: 4 }, id: 'once', delay: 60_000 },
      { payload: { n: 5 }, id: 'other', delay: 60_000 },
    ]);
    expect((await metrics.queue.scheduleWithResult(topic, { n: 6 }, { id: 'once', delay: 60_000, replace: true })).status).toBe('replaced');
    expect(await count('scheduled')).toBe(2);
    expect(await count('duplicate')).toBe(3);
    expect(await count('replaced')).toBe(1);
  });

  it('counts the log lines Redis did not take, by topic (job.log.dropped: see job-logs-outage.spec.ts)', async () => {
    const events = metrics.get(RedisLockEvents);
    events.emit('job.log.dropped', { topic: 'idle.topic', id: 'a', lines: 3, error: new Error('unreachable') });
    events.emit('job.log.dropped', { topic: 'idle.topic', id: 'b', lines: 1, error: new Error('unreachable') });
    expect(await metrics.value('redis_lock_job_log_lines_dropped_total', { topic: 'idle.topic' })).toBe(4);
  });

  it('unregisters its metrics when the application closes, so another app can register them again', async () => {
    const shared = new Registry();
    const open = async () => {
      const other = await Test.createTestingModule({
        imports: [
          RedisLockModule.forRoot({ redis: testRedisUrl(), keyPrefix: uniquePrefix('m2'), isGlobal: true }),
          RedisLockMetricsModule.forRoot({ registry: shared }),
        ],
      }).compile();
      await other.init();
      return other;
    };
    const first = await open();
    expect(first.get(RedisLockMetrics).registry).toBe(shared);
    await first.close();
    expect(shared.getMetricsAsArray()).toEqual([]);
    const second = await open();
    await second.close();
  });
});
