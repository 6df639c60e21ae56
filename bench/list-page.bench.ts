/**
 * Job list benchmark: `list(topic, { state, limit, cursor })` costs O(limit) per page whatever the
 * size of the state. Fills one topic with N scheduled jobs (default 200,000; BENCH_JOBS=1000000),
 * then walks every page of 1,000 and times each; a page near the end must take about as long as
 * the first (an offset-based page would grow with its offset).
 *
 *   node --import ./tools/typescript-loader/register.js bench/list-page.bench.ts
 *   BENCH_JOBS=1000000 node --import ./tools/typescript-loader/register.js bench/list-page.bench.ts
 *
 * Prints the per-page times (median of the first and of the last 10 pages) and exits.
 */
import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import { DelayQueueService, RedisLockModule } from '../lib/index.js';
import { provideBenchRedis } from './support/bench-redis.js';

const JOBS = Number(process.env.BENCH_JOBS ?? 200_000);
const PAGE = 1000;
const TOPIC = 'bench.list';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<void> {
  const redis = await provideBenchRedis();
  const app = await Test.createTestingModule({
    imports: [RedisLockModule.forRoot({ redis: redis.url, keyPrefix: `bench-list-${Date.now()}` })],
  }).compile();
  await app.init();
  const queue = app.get(DelayQueueService);
  const base = Date.now() + 86_400_000;
  for (let from = 0; from < JOBS; from += PAGE) {
    const batch = Array.from({ length: Math.min(PAGE, JOBS - from) }, (_, k) => ({
      payload: { n: from + k },
      at: base + ((from + k) % 50_000),
    }));
    await queue.scheduleMany(TOPIC, batch);
  }
  const times: number[] = [];
  let cursor: string | undefined;
  let listed = 0;
  do {
    const started = performance.now();
    const page = await queue.list(TOPIC, { state: 'scheduled', limit: PAGE, cursor });
    times.push(performance.now() - started);
    listed += page.jobs.length;
    cursor = page.cursor;
  } while (cursor);
  const first = median(times.slice(0, 10));
  const last = median(times.slice(-10));
  console.log(`list: ${JOBS} scheduled jobs, ${times.length} pages of ${PAGE}, ${listed} listed`);
  console.log(
    `page time (ms): first 10 median ${first.toFixed(1)}, last 10 median ${last.toFixed(1)}, max ${Math.max(...times).toFixed(1)}`,
  );
  await app.close();
  await redis.stop();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
