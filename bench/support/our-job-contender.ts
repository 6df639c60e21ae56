import 'reflect-metadata';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DelayQueueService, RedisLockModule, type Consumer, type ConsumerOptions } from '../../lib/index.js';
import type { BenchJob, JobContender } from './job-contender.js';

/**
 * This library in the job benches: groups through `schedule`/`scheduleMany` with `{ group }`, a rate
 * limit through `consume(topic, handler, { rateLimit: { max, duration } })`.

 */
const TOPIC = 'bench';
/** scheduleMany writes 500 jobs per atomic batch; 1,000 per call keeps the call count low. */
const CHUNK = 1000;

async function openApp(url: string, keyPrefix: string): Promise<{ app: INestApplicationContext; queue: DelayQueueService }> {
  const app = await NestFactory.createApplicationContext(RedisLockModule.forRoot({ redis: url, keyPrefix }), { logger: ['error'] });
  return { app, queue: app.get(DelayQueueService) };
}

export const ourJobContender: JobContender = {
  key: 'ours',
  name: 'nestjs-redis-lock',
  settings:
    'scheduleMany with { group } (groups) / consume with { concurrency, rateLimit } (rate limit), other options default (visibility 30 s)',
  async openProducer(url, namespace, grouped) {
    const { app, queue } = await openApp(url, namespace);
    return {
      async enqueue(jobs) {
        for (let i = 0; i < jobs.length; i += CHUNK) {
          const chunk = jobs.slice(i, i + CHUNK).map((job) => ({ payload: job, ...(grouped ? { group: `g${job.g}` } : {}) }));
          await queue.scheduleMany(TOPIC, chunk);
        }
      },
      close: () => app.close(),
    };
  },
  async openConsumer(url, namespace, plan, handler) {
    const { app, queue } = await openApp(url, namespace);
    let consumer: Consumer | undefined;
    return {
      start() {
        const options: ConsumerOptions = { concurrency: plan.concurrency, ...(plan.rateLimit ? { rateLimit: plan.rateLimit } : {}) };
        consumer = queue.consume<BenchJob>(TOPIC, (job, context) => handler(job, context.claimedAt.getTime()), options);
      },
      counters: () => ({}),
      async close() {
        await consumer?.close();
        await app.close();
      },
    };
  },
};
