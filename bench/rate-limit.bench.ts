/**
 * Rate-limit benchmark: a start limit for one topic shared by several instances. This library's
 * `consume(topic, handler, { rateLimit: { max, duration } })` against BullMQ's Worker `limiter`, in
 * one run on the same Redis.
 *
 *   npm run bench:rate-limit                 (REDIS_URL=redis://… to use a server of yours instead of a private one)
 *   BENCH_QUICK=1 npm run bench:rate-limit   (a smoke run: 300 jobs; numbers not comparable)
 *   BENCH_ONLY=bullmq npm run bench:rate-limit   (some contenders only: ours, bullmq)
 *
 * Limit max = 100 starts per duration = 1000 ms; 2,000 jobs due now, written before the consumers
 * start; 3 consumer processes with concurrency 8 each, every one configured with the limit; a handler
 * waits 1 ms. Every handler records its start on CLOCK_MONOTONIC (one clock for every process of the
 * machine). Reported: the achieved rate ((starts − max) ÷ (last start − first start), which is
 * max/duration exactly for a limiter that fills every window), the most starts in any sliding window
 * of `duration` (must be ≤ max) and how many windows held more, the same for windows 20 ms shorter
 * (what a limiter exact on the Redis clock can show once delivery to the handler varies by up to
 * 20 ms), and CPU per job: all consumer processes + the bench process and the Redis server.
 *
 * Writes bench/results/rate-limit-latest.md and .json and exits.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { provideMeteredRedis } from './support/bench-redis.js';
import { environmentLine, writeResults } from './support/bench-report.js';
import { contenderTable, cpuColumns, formatNumber, type Column } from './support/contender-table.js';
import { runFleet } from './support/fleet-run.js';
import { selectContenders, type JobContender } from './support/job-contender.js';
import { rateLimitContenders } from './support/rate-limit-contenders.js';
import { windowCounts, type WindowCounts } from './support/start-windows.js';
import type { RunRecord } from './support/consumer-protocol.js';
import { cpuPerJob, UsageMeter, type CpuPerJob } from './support/usage-meter.js';

const QUICK = process.env.BENCH_QUICK === '1';
const PLAN = {
  jobs: QUICK ? 300 : 2000,
  max: 100,
  duration: 1000,
  processes: 3,
  concurrency: 8,
  workMs: 1,
  /** The shorter window's allowance for delivery jitter between the limiter's decision and the handler's start. */
  jitterMs: 20,
  timeoutMs: QUICK ? 60_000 : 120_000,
};

/** CPU per job: the client side is every consumer process + the bench process. */
interface RunResult extends Partial<CpuPerJob> {
  readonly name: string;
  readonly error?: string;
  /** (starts − max) ÷ (last start − first start), per second; and that ÷ (max / duration). */
  readonly startsPerSec?: number;
  readonly utilisation?: number;
  readonly firstStartMs?: number;
  readonly lastStartMs?: number;
  readonly exact?: WindowCounts;
  readonly tolerant?: WindowCounts;
  /** The same on the limiter's own clock (ours: JobContext.claimedAt, Redis; BullMQ: job.processedOn). */
  readonly admitted?: WindowCounts;
  readonly runsPerProcess?: number[];
}

function progress(message: string): void {
  process.stderr.write(`[bench:rate-limit] ${message}\n`);
}

async function runOne(contender: JobContender, url: string, meter: UsageMeter): Promise<RunResult> {
  const jobs = Array.from({ length: PLAN.jobs }, (_, s) => ({ g: 0, s }));
  const run = await runFleet(
    {
      bench: 'rate-limit',
      contender,
      url,
      namespace: `bench-rate-${randomBytes(3).toString('hex')}`,
      processes: PLAN.processes,
      consumer: { plan: { concurrency: PLAN.concurrency, rateLimit: { max: PLAN.max, duration: PLAN.duration } }, workMs: PLAN.workMs },
      jobs,
      grouped: false,
      enqueue: 'before',
      timeoutMs: PLAN.timeoutMs,
    },
    meter,
  );
  const starts = run.fleet.records.map((r) => r[2]).sort((a, b) => a - b);
  const spanMs = (starts[starts.length - 1] - starts[0]) / 1000;
  const startsPerSec = ((starts.length - PLAN.max) / spanMs) * 1000;
  return {
    name: contender.name,
    startsPerSec,
    utilisation: startsPerSec / ((PLAN.max / PLAN.duration) * 1000),
    firstStartMs: (starts[0] - run.goUs) / 1000,
    lastStartMs: (starts[starts.length - 1] - run.goUs) / 1000,
    exact: windowCounts(starts, PLAN.duration, PLAN.max),
    tolerant: windowCounts(starts, PLAN.duration - PLAN.jitterMs, PLAN.max),
    admitted: admittedWindows(run.fleet.records),
    ...cpuPerJob(run.usage, jobs.length, run.fleet.cpuMicros),
    runsPerProcess: run.fleet.runsPerProcess,
  };
}

async function main(): Promise<void> {
  const bench = await provideMeteredRedis();
  const { redis, meter, version, loadAtStart } = bench;
  progress(`Redis ${version} at ${redis.url} (${redis.source}); load ${loadAtStart.map((l) => l.toFixed(2)).join(' ')}`);
  const contenders = selectContenders(rateLimitContenders);
  const results: RunResult[] = [];
  try {
    for (const contender of contenders) {
      progress(`${contender.name}: ${PLAN.jobs} jobs, limit ${PLAN.max} per ${PLAN.duration} ms, ${PLAN.processes} processes`);
      try {
        results.push(await runOne(contender, redis.url, meter));
      } catch (error) {
        progress(`${contender.name} failed: ${(error as Error).message}`);
        results.push({ name: contender.name, error: (error as Error).message });
      }
      await bench.flushIfPrivate();
    }
  } finally {
    await bench.close();
  }
  const environment = environmentLine(version, loadAtStart, ['ioredis', '@nestjs/core', 'bullmq'], QUICK);
  writeResults('rate-limit', render(results, contenders, environment.text), {
    date: new Date().toISOString(),
    environment: environment.text,
    versions: environment.versions,
    plan: PLAN,
    results,
  });
}

const COLUMNS: readonly Column<RunResult>[] = [
  { header: 'starts/s', digits: 1, better: 'none', value: (r) => r.startsPerSec },
  { header: 'of the limit', digits: 3, better: 'none', value: (r) => r.utilisation },
  { header: `max in ${PLAN.duration} ms`, digits: 0, better: 'lower', value: (r) => r.exact?.max },
  { header: `windows over ${PLAN.max}`, digits: 0, better: 'none', value: (r) => r.exact?.overLimit },
  { header: `max in ${PLAN.duration} ms, limiter's clock`, digits: 0, better: 'lower', value: (r) => r.admitted?.max },
  { header: `max in ${PLAN.duration - PLAN.jitterMs} ms`, digits: 0, better: 'lower', value: (r) => r.tolerant?.max },
  {
    header: `windows over ${PLAN.max} (${PLAN.duration - PLAN.jitterMs} ms)`,
    digits: 0,
    better: 'none',
    value: (r) => r.tolerant?.overLimit,
  },
  { header: 'last start s', digits: 2, better: 'lower', value: (r) => (r.lastStartMs === undefined ? undefined : r.lastStartMs / 1000) },
];
const CPU_COLUMNS = cpuColumns<RunResult>({ client: 'consumers + bench CPU', total: 'total' }, 0);

function render(results: readonly RunResult[], contenders: readonly JobContender[], environment: string): string {
  const ours = results.find((r) => r.name === 'nestjs-redis-lock' && !r.error);
  const ok = results.filter((r) => !r.error);
  const idealLastStart = (Math.ceil(PLAN.jobs / PLAN.max) - 1) * (PLAN.duration / 1000);
  return [
    '# Rate limit across instances: nestjs-redis-lock vs BullMQ',
    '',
    `${new Date().toISOString()} — ${environment}`,
    '',
    `Limit ${PLAN.max} starts per ${PLAN.duration} ms; ${PLAN.jobs} jobs due now, written before the consumers start; ` +
      (`${PLAN.processes} consumer processes × concurrency ${PLAN.concurrency}, each configured with the ` +
        `limit; a handler waits ${PLAN.workMs} ms.`),
    '',
    contenderTable(ok, ours, COLUMNS),
    '',
    'CPU on both sides (over the whole run, most of it spent waiting for the limit):',
    '',
    contenderTable(ok, ours, CPU_COLUMNS),
    '',
    ...results.map((r) =>
      r.error
        ? `- ${r.name}: FAILED: ${r.error}`
        : `- ${r.name}: first start ${formatNumber(r.firstStartMs)} ms after the consumers were told to start, ` +
          `last ${formatNumber(r.lastStartMs)} ms; ` +
          `starts per process ${r.runsPerProcess?.join('/')}`,
    ),
    '',
    `Reading: starts are recorded by each handler on CLOCK_MONOTONIC (process.hrtime), one clock for ` +
      `every process of the machine, when the ` +
      (`handler begins: after the limiter let the job through and the job reached its process, so they ` +
        `trail the limiter's own decision by a `) +
      (`variable delivery time. "max in ${PLAN.duration} ms" = the most starts in any window [t, t + ${PLAN.duration} ` +
        `ms) (the limit's own `) +
      (`window; must be ≤ ${PLAN.max}), "windows over" = how many starts open a window holding more than ${PLAN.max}. ` +
        `"limiter's clock" counts the same windows over the time each limiter says it admitted the start ` +
        `(ours: JobContext.claimedAt, the Redis clock; BullMQ: job.processedOn, its worker's Date.now()), ` +
        `which no delivery delay blurs. The ${PLAN.duration - PLAN.jitterMs} ms `) +
      (`columns count the same in windows ${PLAN.jitterMs} ms shorter: a limiter exact on its own clock ` +
        `stays ≤ ${PLAN.max} there as long as delivery `) +
      (`varies by less than ${PLAN.jitterMs} ms. "starts/s" = (starts − ${PLAN.max}) ÷ (last start − first ` +
        `start): ${PLAN.max / (PLAN.duration / 1000)}/s `) +
      (`for a limiter that fills every window (the last of ${PLAN.jobs} jobs then starts ${idealLastStart} ` +
        `s after the first), "of the limit" = that ÷ `) +
      (`${PLAN.max / (PLAN.duration / 1000)}/s. CPU: every consumer process and the bench process (process.cpuUsage), ` +
        `the redis-server process `) +
      ('(INFO cpu), commands in INFO commandstats (inside scripts included), from the start to the last ' +
        'handler, per job. "ours vs X" > 1 means ours is better.'),
    '',
    ...contenders.map((c) => `- ${c.name}: ${c.settings}`),
    '',
  ].join('\n');
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);

/** Windows over the time each contender's limiter says it admitted each start, when every record has one. */
function admittedWindows(records: readonly RunRecord[]): WindowCounts | undefined {
  if (records.some((r) => r[4] < 0)) return undefined;
  return windowCounts(
    records.map((r) => r[4] * 1000).sort((a, b) => a - b),
    PLAN.duration,
    PLAN.max,
  );
}
