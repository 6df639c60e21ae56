/**
 * Redis memory per waiting job (issue 36): schedules JOBS (1,000,000) jobs on a fresh redis-server
 * with `scheduleMany` (default ids: UUIDs) and reports `used_memory` after less before, divided by
 * the jobs, for jobs due now and for jobs delayed by an hour; no consumer runs. Each figure comes
 * from its own server, so nothing else lives in it.
 *
 *   node --import ./tools/typescript-loader/register.js bench/job-memory.bench.ts
 *   JOBS=100000 …                        (quicker; the per-job figure moves a little with the count)
 *   JOB_MEMORY_OUT=bench/results/issue-36/memory-head.md …   (where the report goes; default: stdout only)
 *
 * The payload is `{ orderId: <i> }`, as a typical small job carries (17-24 bytes of JSON).
 */
import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { DelayQueueService, RedisLockModule } from '../lib/index.js';
import { startLocalRedisServer } from '../lib/testing/local-redis-server.js';

const JOBS = Number(process.env.JOBS ?? 1_000_000);
const BATCH = 5_000;
const TOPIC = 'orders';

async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

/** Bytes of Redis memory per job, `delay` ms ahead. */
async function bytesPerJob(delay: number): Promise<{ bytes: number; sample: string }> {
  await using server = await startLocalRedisServer();
  const redis = new Redis(server.url);
  const app = await NestFactory.createApplicationContext(RedisLockModule.forRoot({ redis: server.url }), { logger: ['error'] });
  try {
    const queue = app.get(DelayQueueService);
    // One job first, so the topic's keys and the scripts exist before the baseline.
    await queue.schedule(TOPIC, { orderId: -1 }, { delay });
    const before = await usedMemory(redis);
    for (let i = 0; i < JOBS - 1; i += BATCH) {
      const count = Math.min(BATCH, JOBS - 1 - i);
      await queue.scheduleMany(
        TOPIC,
        Array.from({ length: count }, (_, k) => ({ payload: { orderId: i + k }, delay })),
      );
    }
    const after = await usedMemory(redis);
    const id = String(await redis.hrandfield(`rl:dq:{${TOPIC}}:jobs`));
    const sample = JSON.stringify(await redis.hget(`rl:dq:{${TOPIC}}:jobs`, id));
    return { bytes: (after - before) / (JOBS - 1), sample: `${JSON.stringify(id)} -> ${sample}` };
  } finally {
    await app.close();
    redis.disconnect();
  }
}

const due = await bytesPerJob(0);
const delayed = await bytesPerJob(3_600_000);
const report = [
  `# Redis memory per waiting job`,
  '',
  `bench/job-memory.bench.ts, ${new Date().toISOString()}: ${JOBS.toLocaleString('en')} jobs per figure, each on a fresh redis-server, ` +
    'used_memory (INFO memory) after less before, divided by the jobs. Payload `{ orderId: <i> }`, default ids (UUIDs).',
  '',
  '| jobs | bytes per job | a stored job |',
  '| --- | ---: | --- |',
  `| due now | ${due.bytes.toFixed(1)} | \`${due.sample}\` |`,
  `| delayed 1 h | ${delayed.bytes.toFixed(1)} | \`${delayed.sample}\` |`,
  '',
].join('\n');
process.stdout.write(report);
const out = process.env.JOB_MEMORY_OUT;
if (out) {
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, report);
}
