import { Queue as GroupQueue, Worker as GroupWorker } from 'groupmq';
import { DelayedError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { bullmqConnection, openBullmqProducer } from './bullmq-producer.js';
import { ourJobContender } from './our-job-contender.js';
import type { BenchJob, JobContender } from './job-contender.js';

/**
 * The contenders of the groups bench: jobs of one group run one at a time, in order, across
 * processes. groupmq does it natively; BullMQ's open-source edition has no groups, so its row is the
 * workaround a user writes (a lock per group, and a job whose group is busy goes back as delayed).
 */

/** groupmq's enqueue goes through its documented `autoBatch` (one script call per batch), the peer of a bulk add. */
const GROUPMQ_BATCH = 500;
/** The workaround's group lock outlives any handler here (as a visibility timeout would). */
const GROUP_LOCK_TTL_MS = 30_000;
/** How far a job whose group is busy is pushed back (as in BullMQ's "process step jobs" pattern). */
export const GROUP_RETRY_DELAY_MS = 100;

export const groupmqContender: JobContender = {
  key: 'groupmq',
  name: 'groupmq',
  settings:
    `Queue with autoBatch { size: ${GROUPMQ_BATCH} } + Worker, other options default (jobTimeoutMs 30 ` +
    `s, reserveScanLimit 20, blockingTimeoutSec 5)`,
  async openProducer(url, namespace) {
    const queue = new GroupQueue<BenchJob>({ redis: new Redis(url), namespace, autoBatch: { size: GROUPMQ_BATCH, maxWaitMs: 10 } });
    return {
      async enqueue(jobs) {
        // One batch at a time, so a batch is exactly the jobs added together (a flush takes the whole buffer).
        for (let i = 0; i < jobs.length; i += GROUPMQ_BATCH) {
          await Promise.all(jobs.slice(i, i + GROUPMQ_BATCH).map((job) => queue.add({ groupId: `g${job.g}`, data: job })));
        }
      },
      close: () => queue.close(),
    };
  },
  async openConsumer(url, namespace, plan, handler) {
    const redis = new Redis(url);
    const queue = new GroupQueue<BenchJob>({ redis, namespace });
    await redis.ping();
    let worker: GroupWorker<BenchJob> | undefined;
    return {
      // groupmq's Worker starts consuming in its constructor.
      start() {
        worker = new GroupWorker<BenchJob>({ queue, concurrency: plan.concurrency, handler: (job) => handler(job.data) });
      },
      counters: () => ({}),
      async close() {
        await worker?.close();
        await queue.close();
      },
    };
  },
};

const RELEASE_IF_OWNER = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

export const bullmqGroupWorkaround: JobContender = {
  key: 'bullmq',
  name: 'bullmq (lock per group + moveToDelayed)',
  settings:
    `Queue.addBulk + Worker; the processor takes SET NX PX ${GROUP_LOCK_TTL_MS} on the job's group and ` +
    `releases it with a compare-and-delete; ` +
    `a job whose group is locked goes back with job.moveToDelayed(now + ${GROUP_RETRY_DELAY_MS} ms) + DelayedError; Worker options default`,
  openProducer: (url, namespace) => openBullmqProducer(url, namespace),
  async openConsumer(url, namespace, plan, handler) {
    const locks = new Redis(url);
    let deferred = 0;
    const worker = new Worker<BenchJob>(
      namespace,
      async (job: Job<BenchJob>, token?: string) => {
        const lockKey = `${namespace}:group-lock:g${job.data.g}`;
        const owner = token ?? String(job.id);
        if ((await locks.set(lockKey, owner, 'PX', GROUP_LOCK_TTL_MS, 'NX')) !== 'OK') {
          deferred++;
          await job.moveToDelayed(Date.now() + GROUP_RETRY_DELAY_MS, token);
          throw new DelayedError();
        }
        try {
          await handler(job.data);
        } finally {
          await locks.eval(RELEASE_IF_OWNER, 1, lockKey, owner);
        }
      },
      { connection: bullmqConnection(url), concurrency: plan.concurrency, autorun: false, removeOnComplete: { count: 0 } },
    );
    await worker.waitUntilReady();
    await locks.ping();
    return {
      start() {
        void worker.run();
      },
      counters: () => ({ 'put back (group busy)': deferred }),
      async close() {
        await worker.close();
        locks.disconnect();
      },
    };
  },
};

export const groupContenders: readonly JobContender[] = [ourJobContender, groupmqContender, bullmqGroupWorkaround];
