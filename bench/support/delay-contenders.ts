import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { Queue, Worker, type Job } from 'bullmq';
import { DelayQueueService, RedisLockModule } from '../../lib/index.js';
import { bullmqConnection } from './bullmq-producer.js';
import { until } from './delay-stats.js';
import type { Usage, UsageMeter } from './usage-meter.js';

/**
 * One library under test. Every scenario builds its own producers and consumers on a fresh queue
 * name and tears them down, so the scenarios never see each other's keys or connections.
 */
export interface DelayContender {
  readonly name: string;
  readonly settings: string;
  /**
   * Schedules jobs with these delays (ms) at once, runs them, and returns each handler's lateness
   * (ms) and the CPU used from the enqueue to the last handler (consumers already running).
   */
  lateness(delays: readonly number[], concurrency: number, meter: UsageMeter): Promise<{ lateness: number[]; usage: Usage }>;
  /**
   * Enqueues `count` jobs due now while one consumer runs. Resolves, in ms from the start of the
   * enqueue: when the enqueue returned, when the first handler ran, when the last one finished; and
   * the CPU used over that stretch.
   */
  burst(count: number, concurrency: number, meter: UsageMeter): Promise<BurstTimes & { usage: Usage }>;
  /** Starts `consumers` idle consumers of one topic; resolves a function that stops them. */
  idle(consumers: number): Promise<() => Promise<void>>;
}

export interface BurstTimes {
  readonly enqueueMs: number;
  readonly firstMs: number;
  readonly drainMs: number;
}

function name(label: string): string {
  return `${label}-${randomBytes(3).toString('hex')}`;
}

// ---- this library -------------------------------------------------------------------------------

async function ourApp(url: string, keyPrefix: string): Promise<{ app: INestApplicationContext; queue: DelayQueueService }> {
  const app = await NestFactory.createApplicationContext(RedisLockModule.forRoot({ redis: url, keyPrefix }), { logger: ['error'] });
  return { app, queue: app.get(DelayQueueService) };
}

export function ours(url: string): DelayContender {
  return {
    name: 'nestjs-redis-lock',
    settings: 'DelayQueueService.consume, default options (visibility 30 s, maxIdleWait 10 s)',
    async lateness(delays, concurrency, meter) {
      const { app, queue } = await ourApp(url, name('bench'));
      const lateness: number[] = [];
      try {
        queue.consume(
          'lateness',
          (_payload, job) => {
            lateness.push(Date.now() - job.scheduledAt.getTime());
          },
          { concurrency },
        );
        await new Promise((resolve) => setTimeout(resolve, 200));
        const stop = await meter.start();
        await queue.scheduleMany(
          'lateness',
          delays.map((delay, i) => ({ payload: i, delay })),
        );
        await until(() => lateness.length >= delays.length, Math.max(...delays) + 30_000, 'the lateness jobs (ours)');
        return { lateness, usage: await stop() };
      } finally {
        await app.close();
      }
    },
    async burst(count, concurrency, meter) {
      const { app, queue } = await ourApp(url, name('bench'));
      let done = 0;
      let first = 0;
      try {
        queue.consume(
          'burst',
          () => {
            if (done++ === 0) first = performance.now();
          },
          { concurrency },
        );
        await new Promise((resolve) => setTimeout(resolve, 200));
        const stop = await meter.start();
        const started = performance.now();
        await queue.scheduleMany(
          'burst',
          Array.from({ length: count }, (_, i) => ({ payload: i })),
        );
        const enqueued = performance.now();
        await until(() => done >= count, 120_000, 'the burst (ours)');
        const drainMs = performance.now() - started;
        return { enqueueMs: enqueued - started, firstMs: first - started, drainMs, usage: await stop() };
      } finally {
        await app.close();
      }
    },
    async idle(consumers) {
      const keyPrefix = name('bench');
      const apps = await Promise.all(Array.from({ length: consumers }, () => ourApp(url, keyPrefix)));
      for (const { queue } of apps) queue.consume('idle', () => undefined);
      return async () => {
        await Promise.all(apps.map(({ app }) => app.close()));
      };
    },
  };
}

// ---- BullMQ --------------------------------------------------------------------------------------

export function bullmq(url: string): DelayContender {
  const conn = bullmqConnection(url);
  return {
    name: 'bullmq',
    settings: 'Queue.addBulk with opts.delay + Worker, default options (drainDelay 5 s, stalledInterval 30 s)',
    async lateness(delays, concurrency, meter) {
      const queueName = name('lateness');
      const queue = new Queue(queueName, { connection: conn });
      const lateness: number[] = [];
      const worker = new Worker(
        queueName,
        async (job: Job) => {
          lateness.push(Date.now() - (job.timestamp + (job.opts.delay ?? 0)));
        },
        { connection: conn, concurrency, removeOnComplete: { count: 0 } },
      );
      try {
        await worker.waitUntilReady();
        await queue.waitUntilReady();
        await new Promise((resolve) => setTimeout(resolve, 200));
        const stop = await meter.start();
        await queue.addBulk(delays.map((delay, i) => ({ name: 'j', data: i, opts: { delay, removeOnComplete: true } })));
        await until(() => lateness.length >= delays.length, Math.max(...delays) + 30_000, 'the lateness jobs (bullmq)');
        return { lateness, usage: await stop() };
      } finally {
        await worker.close();
        await queue.obliterate({ force: true }).catch(() => undefined);
        await queue.close();
      }
    },
    async burst(count, concurrency, meter) {
      const queueName = name('burst');
      const queue = new Queue(queueName, { connection: conn });
      let done = 0;
      let first = 0;
      const worker = new Worker(
        queueName,
        async () => {
          if (done++ === 0) first = performance.now();
        },
        { connection: conn, concurrency, removeOnComplete: { count: 0 } },
      );
      try {
        await worker.waitUntilReady();
        await queue.waitUntilReady();
        await new Promise((resolve) => setTimeout(resolve, 200));
        const stop = await meter.start();
        const started = performance.now();
        await queue.addBulk(Array.from({ length: count }, (_, i) => ({ name: 'j', data: i, opts: { removeOnComplete: true } })));
        const enqueued = performance.now();
        await until(() => done >= count, 120_000, 'the burst (bullmq)');
        const drainMs = performance.now() - started;
        return { enqueueMs: enqueued - started, firstMs: first - started, drainMs, usage: await stop() };
      } finally {
        await worker.close();
        await queue.obliterate({ force: true }).catch(() => undefined);
        await queue.close();
      }
    },
    async idle(consumers) {
      const queueName = name('idle');
      const workers = Array.from({ length: consumers }, () => new Worker(queueName, async () => undefined, { connection: conn }));
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      return async () => {
        await Promise.all(workers.map((w) => w.close()));
      };
    },
  };
}
