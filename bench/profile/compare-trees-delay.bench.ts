/**
 * CPU per job of this tree's delayed-job burst against another checkout's, in one process: the
 * delayed-job counterpart of compare-trees.bench.ts. On a shared machine two separate runs differ
 * by more than a change being measured; bursts run in one process, seconds apart, under the same
 * load, compare well. Each round runs both trees' burst once (order alternating): 10,000 jobs due
 * now, one consumer with concurrency 16, as in delay.bench.ts (b). Printed: the medians per tree
 * (client CPU: this process, producer and consumer both; Redis CPU: the redis-server process), and
 * the median of the per-round ratios this ÷ other.
 *
 *   OTHER_TREE=/path/to/other/checkout node --import ./tools/typescript-loader/register.js \
 *     bench/profile/compare-trees-delay.bench.ts [rounds=8] [jobs=10000]
 *
 * The other checkout needs bench/support/delay-contenders.ts and node_modules (a symlink will do).
 */
import 'reflect-metadata';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { startLocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { ours, type DelayContender } from '../support/delay-contenders.js';
import { UsageMeter } from '../support/usage-meter.js';

const otherTree = process.env.OTHER_TREE;
if (!otherTree) throw new Error('set OTHER_TREE to the checkout to compare with');
const rounds = Number(process.argv[2] ?? 8);
const jobs = Number(process.argv[3] ?? 10_000);
const CONCURRENCY = 16;

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

interface PerJob {
  readonly client: number;
  readonly redis: number;
}

async function main(): Promise<void> {
  const server = process.env.REDIS_URL ? undefined : await startLocalRedisServer();
  const url = process.env.REDIS_URL ?? server!.url;
  const admin = new Redis(url);
  const meter = new UsageMeter(admin);
  const other = (await import(pathToFileURL(join(otherTree!, 'bench/support/delay-contenders.ts')).href)) as { ours: typeof ours };
  const trees: { name: string; contender: DelayContender; figures: PerJob[] }[] = [
    { name: 'this tree', contender: ours(url), figures: [] },
    { name: 'other tree', contender: other.ours(url), figures: [] },
  ];
  try {
    // A warm-up burst each, not counted: the first one pays for loading and JIT.
    for (const tree of trees) await tree.contender.burst(Math.min(jobs, 2_000), CONCURRENCY, meter);
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? trees : [...trees].reverse();
      for (const tree of order) {
        process.stderr.write(`[compare-trees-delay] round ${round + 1}/${rounds}: ${tree.name}\n`);
        const { usage } = await tree.contender.burst(jobs, CONCURRENCY, meter);
        tree.figures.push({ client: usage.clientCpuMicros / jobs, redis: usage.redisCpuMicros / jobs });
      }
    }
  } finally {
    admin.disconnect();
    await server?.stop();
  }
  const [here, there] = trees;
  const ratio = (pick: (f: PerJob) => number) => median(here.figures.map((f, i) => pick(f) / pick(there.figures[i])));
  console.log(`other tree: ${otherTree}; ${rounds} rounds × ${jobs} jobs, concurrency ${CONCURRENCY}`);
  console.log('| tree | client CPU µs/job | Redis CPU µs/job | client + Redis µs/job |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const tree of trees) {
    const client = median(tree.figures.map((f) => f.client));
    const redis = median(tree.figures.map((f) => f.redis));
    console.log(
      `| ${tree.name} | ${client.toFixed(1)} | ${redis.toFixed(1)} | ${median(tree.figures.map((f) => f.client + f.redis)).toFixed(1)} |`,
    );
  }
  const both = ratio((f) => f.client + f.redis);
  console.log(
    `| this ÷ other (median of rounds) | ${ratio((f) => f.client).toFixed(3)} | ${ratio((f) => f.redis).toFixed(3)} | ${both.toFixed(3)} |`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
