/**
 * Priorities benchmark: `schedule(…, { priority })` against BullMQ 6.7's prioritised jobs
 * (`opts.priority`), in one run on the same private Redis, then how this library's claim scales
 * with the backlog.
 *
 *   npm run bench:priorities                  (REDIS_URL=redis://… to use a server of yours instead)
 *   BENCH_QUICK=1 npm run bench:priorities    (a smoke run: 10k jobs, backlogs 10k and 100k; not comparable)
 *
 * (a) drain: 100,000 jobs due now over 10 priorities (1..10, written round-robin so every batch mixes
 *     them: BullMQ's priority 0 means "no priority"), written before the consumer starts; one consumer,
 *     concurrency 16, a handler that does nothing. jobs/s from the consumer's start to the last handler;
 *     priority inversions: handler starts whose priority is smaller (more urgent) than one started
 *     before it (0 when the backlog is taken in priority order); CPU per job over the drain: this
 *     process (process.cpuUsage: the consumer lives here) and the Redis server (INFO cpu), with the
 *     commands Redis ran per job (INFO commandstats, scripts' inner commands included). Two rounds,
 *     contenders alternating; medians.
 * (b) claim scaling (this library): a due backlog of 10k, then of 1M jobs over 10 priorities; the
 *     first 10k claimed jobs (all of the 10k backlog) measured on the Redis side: Redis CPU per job
 *     (INFO cpu) and the claim script's time per job (INFO commandstats of EVALSHA, wall clock: the
 *     claims carry the acknowledgements). O(log n) per claimed job: the 1M figure stays close to the 10k one.
 *
 * Writes bench/results/priorities-latest.md and .json and exits.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { Queue, Worker, type Job } from 'bullmq';
import { DelayQueueService, RedisLockModule } from '../lib/index.js';
import { provideMeteredRedis, type MeteredRedis } from './support/bench-redis.js';
import { environmentLine, writeResults } from './support/bench-report.js';
import { bullmqConnection } from './support/bullmq-producer.js';
import { contenderTable, cpuColumns, formatNumber, type Column } from './support/contender-table.js';
import { until } from './support/delay-stats.js';
import { markdownTable } from './support/markdown-table.js';
import { cpuPerJob, totalCalls, UsageMeter, type CpuPerJob, type Usage } from './support/usage-meter.js';

const QUICK = process.env.BENCH_QUICK === '1';
const PLAN = {
  drain: { jobs: QUICK ? 10_000 : 100_000, priorities: 10, concurrency: 16, rounds: QUICK ? 1 : 2 },
  scaling: { backlogs: QUICK ? [10_000, 100_000] : [10_000, 1_000_000], measured: QUICK ? 5_000 : 10_000, concurrency: 16 },
  writeBatch: 5_000,
};

/** CPU per job over the drain: the client side is this process (the consumer lives here). */
interface DrainResult extends CpuPerJob {
  readonly name: string;
  readonly jobsPerSec: number;
  readonly enqueueMs: number;
  readonly inversions: number;
}

interface Contender {
  readonly name: string;
  /** Writes the backlog, then drains it with one consumer; resolves the start order of priorities and the drain's usage. */
  drain(url: string, meter: UsageMeter): Promise<{ enqueueMs: number; drainMs: number; order: number[]; usage: Usage }>;
}

function progress(message: string): void {
  process.stderr.write(`[bench:priorities] ${message}\n`);
}

const priorityOf = (i: number) => (i % PLAN.drain.priorities) + 1;
const unique = (label: string) => `${label}-${randomBytes(3).toString('hex')}`;

async function ourQueue(url: string): Promise<{ close(): Promise<void>; queue: DelayQueueService }> {
  const app = await NestFactory.createApplicationContext(RedisLockModule.forRoot({ redis: url, keyPrefix: unique('bench') }), {
    logger: ['error'],
  });
  return { close: () => app.close(), queue: app.get(DelayQueueService) };
}

/** Writes `count` jobs due now, priorities 1..10 round-robin, in scheduleMany batches. */
async function writeOurs(queue: DelayQueueService, topic: string, count: number): Promise<void> {
  for (let from = 0; from < count; from += PLAN.writeBatch) {
    const size = Math.min(PLAN.writeBatch, count - from);
    await queue.scheduleMany(
      topic,
      Array.from({ length: size }, (_, k) => ({ payload: priorityOf(from + k), priority: priorityOf(from + k) })),
    );
  }
}

const OURS: Contender = {
  name: 'nestjs-redis-lock',
  async drain(url, meter) {
    const { queue, close } = await ourQueue(url);
    try {
      const started = performance.now();
      await writeOurs(queue, 'prio', PLAN.drain.jobs);
      const enqueueMs = performance.now() - started;
      const order: number[] = [];
      const stop = await meter.start();
      const go = performance.now();
      queue.consume<number>('prio', (priority) => void order.push(priority), { concurrency: PLAN.drain.concurrency });
      await until(() => order.length >= PLAN.drain.jobs, 300_000, 'the backlog (ours)');
      const drainMs = performance.now() - go;
      return { enqueueMs, drainMs, order, usage: await stop() };
    } finally {
      await close();
    }
  },
};

const BULLMQ: Contender = {
  name: 'bullmq',
  async drain(url, meter) {
    const connection = bullmqConnection(url);
    const queueName = unique('prio');
    const queue = new Queue(queueName, { connection });
    await queue.waitUntilReady();
    let worker: Worker | undefined;
    try {
      const started = performance.now();
      for (let from = 0; from < PLAN.drain.jobs; from += PLAN.writeBatch) {
        const size = Math.min(PLAN.writeBatch, PLAN.drain.jobs - from);
        await queue.addBulk(
          Array.from({ length: size }, (_, k) => ({
            name: 'j',
            data: priorityOf(from + k),
            opts: { priority: priorityOf(from + k), removeOnComplete: true },
          })),
        );
      }
      const enqueueMs = performance.now() - started;
      const order: number[] = [];
      const stop = await meter.start();
      const go = performance.now();
      worker = new Worker(
        queueName,
        async (job: Job<number>) => {
          order.push(job.data);
        },
        { connection, concurrency: PLAN.drain.concurrency, removeOnComplete: { count: 0 } },
      );
      await until(() => order.length >= PLAN.drain.jobs, 300_000, 'the backlog (bullmq)');
      const drainMs = performance.now() - go;
      return { enqueueMs, drainMs, order, usage: await stop() };
    } finally {
      await worker?.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
    }
  },
};

/** Starts whose priority is more urgent than the least urgent one started before. */
function inversions(order: readonly number[]): number {
  let worst = 0;
  let count = 0;
  for (const p of order) {
    if (p < worst) count++;
    worst = Math.max(worst, p);
  }
  return count;
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function drainScenario({ redis, meter, flushIfPrivate }: MeteredRedis): Promise<DrainResult[]> {
  const runs = new Map<string, DrainResult[]>();
  for (let round = 0; round < PLAN.drain.rounds; round++) {
    const order = round % 2 === 0 ? [OURS, BULLMQ] : [BULLMQ, OURS];
    for (const contender of order) {
      progress(`(a) round ${round + 1}: ${contender.name}, ${PLAN.drain.jobs} jobs over ${PLAN.drain.priorities} priorities`);
      const run = await contender.drain(redis.url, meter);
      const jobs = PLAN.drain.jobs;
      const result: DrainResult = {
        name: contender.name,
        jobsPerSec: (jobs / run.drainMs) * 1000,
        enqueueMs: run.enqueueMs,
        inversions: inversions(run.order),
        ...cpuPerJob(run.usage, jobs),
      };
      runs.set(contender.name, [...(runs.get(contender.name) ?? []), result]);
      await flushIfPrivate();
    }
  }
  return [...runs.entries()].map(([name, results]) => ({
    name,
    jobsPerSec: median(results.map((r) => r.jobsPerSec)),
    enqueueMs: median(results.map((r) => r.enqueueMs)),
    inversions: Math.max(...results.map((r) => r.inversions)),
    clientMicros: median(results.map((r) => r.clientMicros)),
    redisMicros: median(results.map((r) => r.redisMicros)),
    redisCommands: median(results.map((r) => r.redisCommands)),
  }));
}

interface ScalingResult {
  readonly backlog: number;
  readonly claimMicrosPerJob: number;
  readonly redisMicrosPerJob: number;
  readonly commandsPerJob: number;
  readonly inversions: number;
}

async function scalingScenario({ redis, meter, flushIfPrivate }: MeteredRedis): Promise<ScalingResult[]> {
  const results: ScalingResult[] = [];
  for (const backlog of PLAN.scaling.backlogs) {
    progress(`(b) backlog ${backlog}: writing`);
    const { queue, close } = await ourQueue(redis.url);
    try {
      await writeOurs(queue, 'scale', backlog);
      progress(`(b) backlog ${backlog}: claiming ${PLAN.scaling.measured}`);
      const order: number[] = [];
      const stop = await meter.start();
      const consumer = queue.consume<number>('scale', (priority) => void order.push(priority), {
        concurrency: PLAN.scaling.concurrency,
      });
      await until(() => order.length >= PLAN.scaling.measured, 300_000, 'the measured claims');
      const usage = await stop();
      await consumer.close();
      const claimed = order.length;
      results.push({
        backlog,
        claimMicrosPerJob: (usage.commandMicrosByName.evalsha ?? 0) / claimed,
        redisMicrosPerJob: usage.redisCpuMicros / claimed,
        commandsPerJob: totalCalls(usage) / claimed,
        inversions: inversions(order),
      });
    } finally {
      await close();
      await flushIfPrivate();
    }
  }
  return results;
}

const COLUMNS: readonly Column<DrainResult>[] = [
  { header: 'jobs/s', digits: 0, better: 'higher', value: (r) => r.jobsPerSec },
  { header: 'priority inversions', digits: 0, better: 'none', value: (r) => r.inversions },
  ...cpuColumns<DrainResult>({ client: 'client CPU', total: 'total CPU' }, 1),
];

function render(drain: DrainResult[], scaling: ScalingResult[], environment: string): string {
  const ours = drain.find((r) => r.name === OURS.name);
  const base = scaling[0];
  const scalingRows = scaling.map((r) => [
    String(r.backlog),
    formatNumber(r.redisMicrosPerJob, 2),
    base ? `${(r.redisMicrosPerJob / base.redisMicrosPerJob).toFixed(2)}×` : '',
    formatNumber(r.claimMicrosPerJob, 2),
    formatNumber(r.commandsPerJob, 1),
    String(r.inversions),
  ]);
  return [
    '# Priorities benchmark',
    '',
    environment,
    '',
    `## (a) drain: ${PLAN.drain.jobs} due jobs over ${PLAN.drain.priorities} priorities, one consumer (concurrency ` +
      `${PLAN.drain.concurrency}); median of ${PLAN.drain.rounds} round(s)`,
    '',
    contenderTable(drain, ours, COLUMNS),
    '',
    ...drain.map((r) => `- ${r.name}: backlog written in ${formatNumber(r.enqueueMs)} ms`),
    '',
    `## (b) claim cost against the due backlog (this library): the first ${PLAN.scaling.measured} claimed jobs`,
    '',
    markdownTable(
      ['due backlog', 'Redis CPU µs/job', 'Redis CPU vs first', 'claim script wall µs/job', 'Redis commands/job', 'priority inversions'],
      scalingRows,
      ['r', 'r', 'r', 'r', 'r', 'r'],
    ),
    '',
    'Redis CPU: user + system CPU of redis-server (INFO cpu) over the measured stretch, per claimed job. Claim script wall: INFO ' +
      'commandstats usec of EVALSHA (the claims, carrying the acknowledgements), measured on the wall clock by Redis, so it ' +
      'includes the time the server was descheduled on a loaded machine; compare the CPU column.',
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const bench = await provideMeteredRedis();
  const { redis, version, loadAtStart } = bench;
  progress(`Redis ${version} at ${redis.url} (${redis.source})`);
  let drain: DrainResult[];
  let scaling: ScalingResult[];
  try {
    drain = await drainScenario(bench);
    scaling = await scalingScenario(bench);
  } finally {
    await bench.close();
  }
  const environment = environmentLine(version, loadAtStart, ['ioredis', '@nestjs/core', 'bullmq'], QUICK);
  writeResults('priorities', render(drain, scaling, environment.text), {
    date: new Date().toISOString(),
    environment: environment.text,
    versions: environment.versions,
    plan: PLAN,
    drain,
    scaling,
  });
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
