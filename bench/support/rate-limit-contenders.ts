import { Worker, type Job } from 'bullmq';
import { bullmqConnection, openBullmqProducer } from './bullmq-producer.js';
import { ourJobContender } from './our-job-contender.js';
import type { BenchJob, JobContender } from './job-contender.js';

/** The contenders of the rate-limit bench: a start limit for one topic shared by every process. */

export const bullmqLimiter: JobContender = {
  key: 'bullmq',
  name: 'bullmq',
  settings:
    "Queue.addBulk + Worker with limiter { max, duration }; BullMQ's limiter is per queue, shared by " +
    'its workers, and counts in fixed windows ' +
    "(INCR of a counter that expires `duration` after the window's first job); other options default",
  openProducer: (url, namespace) => openBullmqProducer(url, namespace),
  async openConsumer(url, namespace, plan, handler) {
    if (!plan.rateLimit) throw new Error('bullmqLimiter: the plan has no rate limit');
    const worker = new Worker<BenchJob>(namespace, (job: Job<BenchJob>) => handler(job.data, job.processedOn), {
      connection: bullmqConnection(url),
      concurrency: plan.concurrency,
      limiter: { max: plan.rateLimit.max, duration: plan.rateLimit.duration },
      autorun: false,
      removeOnComplete: { count: 0 },
    });
    await worker.waitUntilReady();
    return {
      start() {
        void worker.run();
      },
      counters: () => ({}),
      close: () => worker.close(),
    };
  },
};

export const rateLimitContenders: readonly JobContender[] = [ourJobContender, bullmqLimiter];
