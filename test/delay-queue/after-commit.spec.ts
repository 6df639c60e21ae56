import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { RedisLockMetricsModule } from 'nestjs-redis-lock/metrics';
import { Registry } from 'prom-client';
import { DelayQueueService, RedisLockEvents, RedisLockModule, runInTransaction } from '../../lib/index.js';
import type { JobScheduleLostEvent, JobScheduleRetryingEvent } from '../../lib/core/events/job-events.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { uniquePrefix } from '../support/test-app.js';
import { createDelayApp } from './support/delay-test-app.js';
import { sleep, waitFor } from '../support/timing.js';

/**
 * A job scheduled inside a transaction is written to Redis after COMMIT. The write must survive a
 * Redis that is unreachable around the commit (retried until it lands), and a shutdown while Redis
 * is down (flushed until the shutdown deadline, then reported loudly). The client here fails fast
 * (`maxRetriesPerRequest: 1`), so each write attempt fails within ~0.2 s while Redis is down.
 */
describe('Jobs scheduled inside a transaction, written after COMMIT', () => {
  let server: LocalRedisServer;
  let port: number;
  const errors: string[] = [];

  beforeAll(async () => {
    server = await startLocalRedisServer();
    port = server.port;
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'error').mockImplementation((message: unknown) => void errors.push(String(message)));
  });
  afterAll(async () => {
    await server.stop();
    jest.restoreAllMocks();
  });

  const failFast = () => ({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });

  /** Stops Redis, runs `whileDown`, and starts Redis again on the same port after `downtimeMs` in all. */
  async function outage<T>(downtimeMs: number, whileDown: () => Promise<T>): Promise<T> {
    const started = performance.now();
    await server.stop();
    try {
      const result = await whileDown();
      await sleep(Math.max(0, downtimeMs - (performance.now() - started)));
      return result;
    } finally {
      server = await startLocalRedisServer({ port });
    }
  }

  it('runs a job committed while Redis is unreachable for 2 s exactly once, after Redis is back', async () => {
    const t = await createDelayApp({ redis: failFast() });
    const events = t.app.get(RedisLockEvents);
    const retrying: JobScheduleRetryingEvent[] = [];
    events.on('job.schedule.retrying', (event) => retrying.push(event));
    const runs: string[] = [];
    const consumer = t.queue.consume('commit.outage', (_payload, job) => void runs.push(job.id));
    try {
      // COMMIT happens while Redis is down; the write fails and must be retried until it lands.
      const id = await outage(2_000, () => runInTransaction(() => t.queue.schedule('commit.outage', { order: 7 }, { id: 'outage-1' })));
      expect(id).toBe('outage-1');
      await waitFor(() => runs.length >= 1, 20_000, 'the committed job to run once Redis is back');
      await waitFor(async () => (await t.queue.get('commit.outage', id)) === null, 10_000, 'the job to be acknowledged');
      await sleep(300);
      expect(runs).toEqual(['outage-1']);
      expect(t.queue.pendingScheduleWrites).toBe(0);
      expect(retrying[0]).toMatchObject({ topic: 'commit.outage', ids: ['outage-1'], attempt: 1 });
      expect(retrying[0].retryInMs).toBeGreaterThan(0);
      expect(typeof retrying[0].error).toBe('string');
    } finally {
      await consumer.close();
      await t.close();
    }
  });

  it('writes every job of a committed batch (schedule, scheduleMany, replace) and runs each once', async () => {
    const keyPrefix = uniquePrefix('ac');
    const t = await createDelayApp({ redis: failFast(), keyPrefix });
    const runs: string[] = [];
    const consumer = t.queue.consume('commit.many', (_payload, job) => void runs.push(job.id));
    try {
      const ids = await outage(1_500, () =>
        runInTransaction(async () => {
          const first = await t.queue.schedule('commit.many', 1, { id: 'm-1' });
          const rest = await t.queue.scheduleMany('commit.many', [
            { payload: 2, id: 'm-2' },
            { payload: 3, id: 'm-3', replace: true },
          ]);
          return [first, ...rest];
        }),
      );
      await waitFor(() => runs.length >= 3, 20_000, 'the three committed jobs to run');
      await waitFor(() => t.queue.pendingScheduleWrites === 0, 5_000, 'no write pending');
      await sleep(300);
      expect([...runs].sort()).toEqual([...ids].sort());
    } finally {
      await consumer.close();
      await t.close();
    }
  });

  it('flushes a write still pending at shutdown once Redis is back within the shutdown timeout', async () => {
    const keyPrefix = uniquePrefix('ac');
    const t = await createDelayApp({ redis: failFast(), keyPrefix, delayQueue: { shutdownTimeout: 10_000 } });
    const retrying: JobScheduleRetryingEvent[] = [];
    t.app.get(RedisLockEvents).on('job.schedule.retrying', (event) => retrying.push(event));
    let closing: Promise<void> | undefined;
    await outage(2_000, async () => {
      await runInTransaction(() => t.queue.schedule('commit.shutdown', { n: 1 }, { id: 'flushed-1', delay: 60_000 }));
      await waitFor(() => retrying.length >= 1, 10_000, 'the after-commit write to fail and be retried');
      closing = t.close(); // shutdown begins while Redis is still down
    });
    await closing;
    const reader = await createDelayApp({ redis: failFast(), keyPrefix });
    try {
      const job = await reader.queue.get('commit.shutdown', 'flushed-1');
      expect(job).toMatchObject({ id: 'flushed-1', state: 'scheduled', payload: { n: 1 } });
      expect(retrying.length).toBeGreaterThanOrEqual(1);
    } finally {
      await reader.close();
    }
  });

  it('reports what it could not write by the shutdown deadline: an event, an error log with the ids, metrics', async () => {
    const registry = new Registry();
    const app: TestingModule = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRoot({
          redis: failFast(),
          keyPrefix: uniquePrefix('ac'),
          isGlobal: true,
          delayQueue: { shutdownTimeout: 1_000 },
        }),
        RedisLockMetricsModule.forRoot({ registry }),
      ],
    }).compile();
    await app.init();
    const queue = app.get(DelayQueueService);
    const events = app.get(RedisLockEvents);
    const lost: JobScheduleLostEvent[] = [];
    const retrying: JobScheduleRetryingEvent[] = [];
    events.on('job.schedule.lost', (event) => lost.push(event));
    events.on('job.schedule.retrying', (event) => retrying.push(event));
    const metric = async (name: string) => {
      const values = (await registry.getSingleMetric(`redis_lock_${name}`)?.get())?.values ?? [];
      return values.reduce((sum, v) => sum + v.value, 0);
    };
    errors.length = 0;
    await server.stop();
    try {
      await runInTransaction(async () => {
        await queue.schedule('commit.lost', { big: 'x'.repeat(100) }, { id: 'lost-1' });
        await queue.schedule('commit.lost', 2, { id: 'lost-2' });
      });
      await waitFor(() => retrying.length >= 2, 5_000, 'failed after-commit writes to be reported');
      expect(queue.pendingScheduleWrites).toBe(2);
      expect(await metric('after_commit_writes_pending')).toBe(2);
      expect(await metric('after_commit_write_retries_total')).toBeGreaterThanOrEqual(2);
      const started = performance.now();
      await app.close();
      // Bounded: the shutdown timeout plus a short grace, not the lifetime of the retry loop.
      expect(performance.now() - started).toBeLessThan(8_000);
    } finally {
      server = await startLocalRedisServer({ port });
    }
    expect(
      lost
        .map((e) => e.ids)
        .flat()
        .sort(),
    ).toEqual(['lost-1', 'lost-2']);
    expect(lost.every((e) => e.topic === 'commit.lost' && e.payloadBytes > 0)).toBe(true);
    expect(lost.find((e) => e.ids.includes('lost-1'))!.payloadBytes).toBeGreaterThan(100);
    const logged = errors.filter((m) => m.includes('commit.lost'));
    expect(logged.some((m) => m.includes('"lost-1"'))).toBe(true);
    expect(logged.some((m) => m.includes('"lost-2"'))).toBe(true);
  });
});
