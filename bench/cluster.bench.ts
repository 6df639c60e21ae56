/**
 * Redis Cluster benchmark: this library's locks and delayed jobs on a 3-master cluster (3 masters +
 * 3 replicas, started on loopback by tools/local-redis-cluster.ts) next to a single Redis, and the
 * delayed-job burst with the topic split into 1, 3 and 6 shards.
 *
 *   npm run bench:cluster                     (REDIS_CLUSTER_NODES=host:port,… to use a cluster of yours)
 *   BENCH_QUICK=1 npm run bench:cluster       (a smoke run: smaller; numbers not comparable)
 *
 * (a) locks, ours next to the peers of bench:locks (raw SET NX PX, @sesamecare-oss/redlock and
 *     redis-semaphore, each on an ioredis Cluster client), on the cluster and on the single Redis:
 *     64 callers on 64 keys of their own for a fixed time (pairs/s), and one caller back to back
 *     (pair latency).
 * (b) burst: N jobs due now on one topic, scheduled with scheduleMany, one consumer (concurrency 32
 *     over all shards); jobs/s from the start of the enqueue to the last handler. Also the Redis CPU
 *     time each master spent on the burst (INFO cpu, before and after): the busiest master bounds
 *     what the topic can do when consumers are many and spread over machines, and sharding exists
 *     to spread exactly that load. On one small machine the end-to-end jobs/s is bounded by the
 *     shared CPU instead, so both are printed.
 *
 * BullMQ is not run here: it needs a `{hash-tagged}` prefix to run on a cluster at all and then keeps
 * a queue on one slot (one master), which bench:delay already measures on one Redis.
 *
 * Writes bench/results/cluster-latest.md and .json and exits.
 */
import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { Test, type TestingModule } from '@nestjs/testing';
import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { DelayQueueService, RedisLockModule, type RedisLockModuleOptions } from '../lib/index.js';
import { provideRedisCluster, formatClusterNodes } from '../tools/local-redis-cluster.js';
import {
  createOurContenders,
  createRawContender,
  createRedlockContender,
  createSemaphoreContender,
  type BenchTarget,
  type LockContender,
} from './support/lock-contenders.js';
import { runParallel, runSequential } from './support/lock-scenarios.js';
import { summarize } from './support/stats.js';
import { startLocalRedisServer } from '../lib/testing/local-redis-server.js';

const QUICK = process.env.BENCH_QUICK === '1';
const PLAN = {
  locks: { width: 64, durationMs: QUICK ? 800 : 3000, sequential: QUICK ? 200 : 1000 },
  burst: { jobs: QUICK ? 2000 : 10_000, concurrency: 32, shards: [1, 3, 6] },
};
const RESULTS_DIR = join(import.meta.dirname, 'results');

function progress(message: string): void {
  process.stderr.write(`[bench:cluster] ${message}\n`);
}

async function app(redis: RedisLockModuleOptions['redis'], extra: Partial<RedisLockModuleOptions> = {}): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLockModule.forRoot({ redis, keyPrefix: `bench-${Math.random().toString(16).slice(2, 10)}`, ...extra })],
  }).compile();
  moduleRef.useLogger(false);
  await moduleRef.init();
  return moduleRef;
}

interface LockRow {
  readonly target: 'single' | 'cluster';
  readonly contender: string;
  readonly parallelPairsPerSec: number;
  readonly sequentialP50Ms: number;
  readonly sequentialP99Ms: number;
}

/** Ours and the peers on one target, one after another, each on keys of its own. */
async function lockRows(target: BenchTarget, label: LockRow['target']): Promise<LockRow[]> {
  const run = Math.random().toString(16).slice(2, 8);
  const [ours] = await createOurContenders(target, `bench-${run}:ours`); // the fixed-lease variant, like the peers
  const contenders: LockContender[] = [
    ours,
    await createRawContender(target, `bench-${run}:raw`),
    await createRedlockContender(target, `bench-${run}:redlock`),
    await createSemaphoreContender(target, `bench-${run}:sem`),
  ];
  const rows: LockRow[] = [];
  try {
    for (const contender of contenders) {
      progress(`(a) locks on ${label}: ${contender.name}`);
      // Warm-up: scripts cached and connections open on every master.
      await runParallel(contender, `warm:${contender.name}`, { width: PLAN.locks.width, durationMs: 300 });
      const parallel = await runParallel(contender, `p:${contender.name}`, { width: PLAN.locks.width, durationMs: PLAN.locks.durationMs });
      const sequential = await runSequential(contender, `s:${contender.name}`, { warmup: 50, iterations: PLAN.locks.sequential });
      const latency = summarize(sequential.latencies);
      rows.push({
        target: label,
        contender: contender.name,
        parallelPairsPerSec: parallel.pairs / (parallel.elapsedMs / 1000),
        sequentialP50Ms: latency.p50,
        sequentialP99Ms: latency.p99,
      });
    }
  } finally {
    for (const contender of contenders) await contender.close();
  }
  return rows;
}

/** Redis CPU seconds (user + sys) each server has used so far, from INFO cpu. */
async function cpuSeconds(servers: ReadonlyArray<{ host: string; port: number }>): Promise<number[]> {
  return Promise.all(
    servers.map(async ({ host, port }) => {
      const client = new Redis({ host, port, lazyConnect: true });
      try {
        await client.connect();
        const info = await client.info('cpu');
        const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
        return field('used_cpu_user') + field('used_cpu_sys');
      } finally {
        client.disconnect();
      }
    }),
  );
}

interface BurstResult {
  jobsPerSec: number;
  enqueueMs: number;
  drainMs: number;
  /** Redis CPU ms per master spent during the burst, busiest first. */
  masterCpuMs: number[];
}

async function burst(
  redis: RedisLockModuleOptions['redis'],
  shards: number,
  masters: ReadonlyArray<{ host: string; port: number }>,
): Promise<BurstResult> {
  const moduleRef = await app(redis, { delayQueue: { topics: { burst: { shards } } } });
  const queue = moduleRef.get(DelayQueueService);
  let done = 0;
  try {
    queue.consume('burst', () => void done++, { concurrency: PLAN.burst.concurrency });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const cpuBefore = await cpuSeconds(masters);
    const started = performance.now();
    await queue.scheduleMany(
      'burst',
      Array.from({ length: PLAN.burst.jobs }, (_, i) => ({ payload: i })),
    );
    const enqueued = performance.now();
    const deadline = started + 180_000;
    while (done < PLAN.burst.jobs) {
      if (performance.now() > deadline) throw new Error(`burst with ${shards} shard(s) did not drain within 180 s (${done} done)`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const drainMs = performance.now() - started;
    const cpuAfter = await cpuSeconds(masters);
    const masterCpuMs = cpuAfter.map((after, i) => (after - cpuBefore[i]) * 1000).sort((a, b) => b - a);
    return { jobsPerSec: PLAN.burst.jobs / (drainMs / 1000), enqueueMs: enqueued - started, drainMs, masterCpuMs };
  } finally {
    await moduleRef.close();
  }
}

async function main(): Promise<void> {
  Logger.overrideLogger(false);
  const [server, cluster] = await Promise.all([startLocalRedisServer(), provideRedisCluster({ masters: 3, replicasPerMaster: 1 })]);
  const clusterOption = { cluster: [...cluster.nodes] };
  progress(`single Redis at ${server.url}; cluster ${formatClusterNodes(cluster.nodes)} (${cluster.source})`);
  const result: Record<string, unknown> = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg: loadavg().map((l) => l.toFixed(2)) },
    plan: PLAN,
    quick: QUICK,
  };
  try {
    const locks = [...(await lockRows(server.url, 'single')), ...(await lockRows({ cluster: cluster.nodes }, 'cluster'))];
    result.locks = locks;
    const lockLines = (['cluster', 'single'] as const).flatMap((target) => {
      const rows = locks.filter((r) => r.target === target);
      const ours = rows.find((r) => r.contender === 'ours')!;
      return rows.map(
        (r) =>
          `| ${target} | ${r.contender} | ${Math.round(r.parallelPairsPerSec)} | ` +
          `${r.contender === 'ours' ? '' : `${(ours.parallelPairsPerSec / r.parallelPairsPerSec).toFixed(2)}×`} | ` +
          `${r.sequentialP50Ms.toFixed(2)} | ${r.sequentialP99Ms.toFixed(2)} |`,
      );
    });

    const bursts: Array<{ target: string; shards: number } & BurstResult> = [];
    const singleAddress = new URL(server.url);
    const single = [{ host: singleAddress.hostname, port: Number(singleAddress.port) }];
    const masters = await cluster.masters();
    progress('(b) burst: single Redis, 1 shard');
    bursts.push({ target: 'single', shards: 1, ...(await burst(server.url, 1, single)) });
    for (const shards of PLAN.burst.shards) {
      progress(`(b) burst: cluster, ${shards} shard(s)`);
      bursts.push({ target: 'cluster', shards, ...(await burst(clusterOption, shards, masters)) });
    }
    result.bursts = bursts.map((b) => ({
      ...b,
      jobsPerSec: Math.round(b.jobsPerSec),
      enqueueMs: Math.round(b.enqueueMs),
      drainMs: Math.round(b.drainMs),
      masterCpuMs: b.masterCpuMs.map(Math.round),
    }));
    const clusterOne = bursts.find((b) => b.target === 'cluster' && b.shards === 1)!;
    const base = clusterOne.jobsPerSec;
    // What the busiest Redis could sustain if it were the only limit: jobs per CPU second of that master.
    const ceiling = (b: BurstResult) => PLAN.burst.jobs / (Math.max(1, b.masterCpuMs[0]) / 1000);

    const lines = [
      `# Redis Cluster benchmark (${result.date})`,
      '',
      `Machine: ${cpus().length} CPUs (${cpus()[0]?.model}), load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; ` +
        'single Redis and 6 cluster nodes all on this machine, loopback.' +
        (QUICK ? ' **QUICK run: not comparable.**' : ''),
      '',
      `## (a) Locks: ${PLAN.locks.width} callers on ${PLAN.locks.width} keys for ${PLAN.locks.durationMs} ` +
        `ms; one caller back to back ${PLAN.locks.sequential}×`,
      '',
      'Every contender uses a fixed 10 s lease and one command connection (an ioredis `Cluster` client on the cluster).',
      '',
      '| target | contender | parallel pairs/s | ours vs it | sequential pair p50 ms | p99 ms |',
      '| --- | --- | ---: | ---: | ---: | ---: |',
      ...lockLines,
      '',
      `## (b) Burst: ${PLAN.burst.jobs} jobs due now, one consumer, concurrency ${PLAN.burst.concurrency}`,
      '',
      '| target | shards | enqueue ms | drain ms | jobs/s end to end | vs cluster 1 shard | Redis CPU ' +
        'ms per master (busiest first) | busiest-master ceiling, jobs/s | ceiling vs 1 shard |',
      '| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |',
      ...bursts.map(
        (b) =>
          `| ${b.target} | ${b.shards} | ${Math.round(b.enqueueMs)} | ${Math.round(b.drainMs)} | ${Math.round(b.jobsPerSec)} | ` +
          `${(b.jobsPerSec / base).toFixed(2)}× | ${b.masterCpuMs.map(Math.round).join(' / ')} | ${Math.round(ceiling(b))} | ` +
          `${(ceiling(b) / ceiling(clusterOne)).toFixed(2)}× |`,
      ),
      '',
      "End to end, one consumer process shares 2 cores with every Redis node, so the machine's CPU bounds jobs/s;",
      'the ceiling column is the rate at which the busiest master would saturate its own core (jobs / its CPU seconds),',
      'which is what bounds a hot topic when many consumers on other machines drain it.',
      '',
    ];
    mkdirSync(RESULTS_DIR, { recursive: true });
    writeFileSync(join(RESULTS_DIR, 'cluster-latest.json'), JSON.stringify(result, null, 2) + '\n');
    writeFileSync(join(RESULTS_DIR, 'cluster-latest.md'), lines.join('\n'));
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    await Promise.all([server.stop(), cluster.stop()]);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
