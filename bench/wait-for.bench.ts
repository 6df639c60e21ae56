/**
 * waitFor benchmark (issue 37): 1,000 callers each waiting for one job's result while another
 * instance runs the 1,000 jobs. This library's `waitFor(topic, id)` against BullMQ's
 * `job.waitUntilFinished(queueEvents)`, in one run on the same private Redis.
 *
 *   node --import ./tools/typescript-loader/register.js bench/wait-for.bench.ts
 *   WAIT_JOBS=200 …   (fewer waiters: a smoke run)
 *
 * Each contender runs twice: once with every job waited for, once with nobody waiting (the same
 * jobs, the same consumer, concurrency 50); the difference is what waiting costs. Reported per run:
 * Redis connections added by the waiting side (INFO clients, before the waits and once all are in
 * place), client CPU (process.cpuUsage: this process runs the waiters and the consumer), Redis CPU
 * (INFO cpu), and the wall time from the consumer's start to the last result. For ours, also what
 * the acknowledgement script pays when nobody waits: the `exists` that announceOutcome runs once
 * per script run (INFO commandstats).
 *
 * Writes bench/results/wait-for-latest.md and .json and exits.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { DelayQueueService, RedisLockModule } from '../lib/index.js';
import { provideBenchRedis, redisServerVersion } from './support/bench-redis.js';
import { environmentLine, writeResults } from './support/bench-report.js';
import { markdownTable } from './support/markdown-table.js';
import { UsageMeter, type Usage } from './support/usage-meter.js';

const JOBS = Number(process.env.WAIT_JOBS ?? 1000);
const CONCURRENCY = 50;
const TOPIC = 'bench-wait';

interface RunResult {
  readonly contender: string;
  readonly waited: boolean;
  readonly connectionsAdded: number;
  readonly wallMs: number;
  readonly usage: Usage;
  readonly results: number;
}

function progress(message: string): void {
  process.stderr.write(`[bench:wait-for] ${message}\n`);
}

async function connectedClients(admin: Redis): Promise<number> {
  return Number(/connected_clients:(\d+)/.exec(await admin.info('clients'))?.[1] ?? Number.NaN);
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 60_000;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function openApp(url: string, keyPrefix: string): Promise<{ app: INestApplicationContext; queue: DelayQueueService }> {
  const app = await NestFactory.createApplicationContext(RedisLockModule.forRoot({ redis: url, keyPrefix }), { logger: ['error'] });
  return { app, queue: app.get(DelayQueueService) };
}

async function runOurs(url: string, admin: Redis, meter: UsageMeter, waited: boolean): Promise<RunResult> {
  const keyPrefix = `bw-${randomBytes(3).toString('hex')}`;
  const waiting = await openApp(url, keyPrefix);
  const running = await openApp(url, keyPrefix);
  try {
    const ids = await waiting.queue.scheduleMany(
      TOPIC,
      Array.from({ length: JOBS }, (_, n) => ({ payload: n })),
    );
    const before = await connectedClients(admin);
    const end = await meter.start();
    const results = waited ? ids.map((id) => waiting.queue.waitFor(TOPIC, id)) : [];
    if (waited) await until(async () => (await admin.hlen(`${keyPrefix}:dq:{${TOPIC}}:waited`)) === JOBS, 'every wait in place');
    const connectionsAdded = (await connectedClients(admin)) - before;
    const startedAt = performance.now();
    let done = 0;
    let allDone!: () => void;
    const finished = new Promise<void>((resolve) => (allDone = resolve));
    const consumer = running.queue.consume<number>(
      TOPIC,
      (n) => {
        if (++done === JOBS) setImmediate(allDone);
        return n;
      },
      { concurrency: CONCURRENCY, keepCompleted: { count: JOBS } },
    );
    const values = waited ? await Promise.all(results) : (await finished, []);
    if (!waited) await until(async () => (await running.queue.stats(TOPIC)).active === 0, 'the last acknowledgement');
    const wallMs = performance.now() - startedAt;
    const usage = await end();
    await consumer.close();
    return { contender: 'ours: waitFor', waited, connectionsAdded, wallMs, usage, results: values.length };
  } finally {
    await Promise.all([waiting.app.close(), running.app.close()]);
  }
}

async function runBullmq(url: string, admin: Redis, meter: UsageMeter, waited: boolean): Promise<RunResult> {
  const prefix = `bwb-${randomBytes(3).toString('hex')}`;
  const connection = { url, maxRetriesPerRequest: null };
  const queue = new Queue(TOPIC, { connection, prefix });
  let events: QueueEvents | undefined;
  let worker: Worker | undefined;
  try {
    const jobs = await queue.addBulk(Array.from({ length: JOBS }, (_, n) => ({ name: 'job', data: n, opts: { removeOnComplete: JOBS } })));
    const before = await connectedClients(admin);
    const end = await meter.start();
    let results: Promise<unknown>[] = [];
    if (waited) {
      events = new QueueEvents(TOPIC, { connection, prefix });
      await events.waitUntilReady();
      results = jobs.map((job) => job.waitUntilFinished(events!));
    }
    const connectionsAdded = (await connectedClients(admin)) - before;
    const startedAt = performance.now();
    let done = 0;
    let allDone!: () => void;
    const finished = new Promise<void>((resolve) => (allDone = resolve));
    worker = new Worker(
      TOPIC,
      async (job) => {
        if (++done === JOBS) setImmediate(allDone);
        return job.data as number;
      },
      { connection, prefix, concurrency: CONCURRENCY },
    );
    worker.on('completed', () => undefined);
    const values = waited ? await Promise.all(results) : (await finished, []);
    if (!waited) await until(async () => (await queue.getActiveCount()) === 0, 'the last completion');
    const wallMs = performance.now() - startedAt;
    const usage = await end();
    return { contender: 'BullMQ: job.waitUntilFinished(queueEvents)', waited, connectionsAdded, wallMs, usage, results: values.length };
  } finally {
    await worker?.close();
    await events?.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
  }
}

async function main(): Promise<void> {
  const loadAtStart = loadavg();
  const redis = await provideBenchRedis();
  const admin = new Redis(redis.url);
  const meter = new UsageMeter(admin);
  const runs: RunResult[] = [];
  try {
    for (const waited of [false, true]) {
      progress(`ours, ${waited ? 'waited' : 'nobody waiting'}`);
      runs.push(await runOurs(redis.url, admin, meter, waited));
      progress(`BullMQ, ${waited ? 'waited' : 'nobody waiting'}`);
      runs.push(await runBullmq(redis.url, admin, meter, waited));
    }
    const ms = (micros: number) => (micros / 1000).toFixed(0);
    const perJob = (micros: number) => (micros / JOBS).toFixed(1);
    const rows = runs.map((r) => [
      r.contender,
      r.waited ? `${JOBS} waiters` : 'nobody waits',
      String(r.connectionsAdded),
      ms(r.usage.clientCpuMicros),
      ms(r.usage.redisCpuMicros),
      perJob(r.usage.clientCpuMicros),
      perJob(r.usage.redisCpuMicros),
      r.wallMs.toFixed(0),
    ]);
    const extra = (contender: string) => {
      const [plain, waited] = [false, true].map((w) => runs.find((r) => r.contender.startsWith(contender) && r.waited === w)!);
      return (
        `${contender}: waiting added ${perJob(waited.usage.clientCpuMicros - plain.usage.clientCpuMicros)} µs client CPU and ` +
        `${perJob(waited.usage.redisCpuMicros - plain.usage.redisCpuMicros)} µs Redis CPU per waited job`
      );
    };
    const oursPlain = runs.find((r) => r.contender.startsWith('ours') && !r.waited)!;
    const exists = oursPlain.usage.callsByName.exists ?? 0;
    const existsMicros = oursPlain.usage.commandMicrosByName.exists ?? 0;
    const scripts = (oursPlain.usage.callsByName.evalsha ?? 0) + (oursPlain.usage.callsByName.eval ?? 0);
    const { text } = environmentLine(await redisServerVersion(admin), loadAtStart, ['bullmq', 'ioredis'], JOBS !== 1000);
    const markdown = [
      `# waitFor: ${JOBS} concurrent waiters`,
      '',
      text,
      '',
      markdownTable(
        [
          'contender',
          'run',
          'Redis connections added by the waiters',
          'client CPU ms',
          'Redis CPU ms',
          'client µs/job',
          'Redis µs/job',
          'wall ms',
        ],
        rows,
      ),
      '',
      `- ${extra('ours')}`,
      `- ${extra('BullMQ')}`,
      `- ours with nobody waiting: ${exists} EXISTS (announceOutcome's check) over ${scripts} script runs, ` +
        `${existsMicros} µs of Redis command time in all (${(existsMicros / JOBS).toFixed(2)} µs per job).`,
      '',
    ].join('\n');
    writeResults('wait-for', markdown, { jobs: JOBS, concurrency: CONCURRENCY, environment: text, runs });
  } finally {
    admin.disconnect();
    await redis.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
