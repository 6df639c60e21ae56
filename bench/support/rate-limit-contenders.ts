import { Queue, Worker, type Job } from 'bullmq';
import { ourJobContender } from './our-job-contender.js';
import type { BenchJob, JobContender } from './job-contender.js';

/** The contenders of the rate-limit bench: a start limit for one topic shared by every process. */

const BULLMQ_CHUNK = 1000;

function connection(url: string) {
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port || 6379) };
}

export const bullmqLimiter: JobContender = {
  key: 'bullmq',
  name: 'bullmq',
  settings:
    "Queue.addBulk + Worker with limiter { max, duration }; BullMQ's limiter is per queue, shared by " +
    'its workers, and counts in fixed windows ' +
    "(INCR of a counter that expires `duration` after the window's first job); other options default",
  async openProducer(url, namespace) {
    const queue = new Queue(namespace, { connection: connection(url) });
    return {
      async enqueue(jobs) {
        for (let i = 0; i < jobs.length; i += BULLMQ_CHUNK) {
          await queue.addBulk(jobs.slice(i, i + BULLMQ_CHUNK).map((job) => ({ name: 'j', data: job, opts: { removeOnComplete: true } })));
        }
      },
      async close() {
        await queue.obliterate({ force: true }).catch(() => undefined);
        await queue.close();
      },
    };
  },
  async openConsumer(url, namespace, plan, handler) {
    if (!plan.rateLimit) throw new Error('bullmqLimiter: the plan has no rate limit');
    const worker = new Worker<BenchJob>(namespace, (job: Job<BenchJob>) => handler(job.data, job.processedOn), {
      connection: connection(url),
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
