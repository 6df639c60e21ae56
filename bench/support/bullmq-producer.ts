import { Queue } from 'bullmq';
import type { BenchProducer } from './job-contender.js';

/** Jobs per `Queue.addBulk` call. */
const BULLMQ_CHUNK = 1000;

/** BullMQ's connection options for the bench's `redis://` URL (BullMQ opens its own connections from them). */
export function bullmqConnection(url: string): { host: string; port: number } {
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port || 6379) };
}

/**
 * The BullMQ producer of the multi-process job benches: `Queue.addBulk` in chunks of 1,000 jobs in
 * array order, each job removed once completed; closing obliterates the queue.
 */
export async function openBullmqProducer(url: string, namespace: string): Promise<BenchProducer> {
  const queue = new Queue(namespace, { connection: bullmqConnection(url) });
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
}
