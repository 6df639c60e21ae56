/**
 * Delayed-job benchmark: this library's DelayQueueService against BullMQ delayed jobs, in one run on
 * the same Redis.
 *
 *   npm run bench:delay            (REDIS_URL=redis://… to use a server of yours instead of a private one)
 *   BENCH_QUICK=1 npm run bench:delay   (a smoke run: smaller and shorter; numbers not comparable)
 *
 * (a) lateness: 3000 jobs due at random times over 3 s, one consumer (concurrency 16); lateness is
 *     handler start minus due time, in ms (Date.now() on the Redis host's clock); "early" counts jobs
 *     that started before their due time.
 * (b) burst: 10,000 jobs due now, one consumer with concurrency 16; jobs/s from the start of the
 *     enqueue to the last handler (the target), and from the first handler to the last (consumption alone).
 *     Four rounds, the contenders' order alternating (each goes first as often), so that a change in
 *     background load hits both alike: each figure is the median of the rounds, the ratio the median
 *     of the per-round ratios.
 * (c) idle cost: 10 consumers of an empty topic; Redis commands per second over a window: every
 *     command the server ran (INFO commandstats, which counts commands run inside scripts too; the
 *     bench's own INFO/CONFIG left out) and client round trips (MONITOR, script-internal commands left out).
 *
 * Next to the wall-clock figures, CPU per job on both sides over (a) and (b) (enqueue to last handler,
 * consumers already running): this process (process.cpuUsage: producer and consumer both live
 * here) and the Redis server (INFO cpu), with the commands Redis ran per job (INFO commandstats,
 * scripts' inner commands included); and CPU per second while idle in (c).
 *
 * Writes bench/results/delay-latest.md and .json and exits.
 */
import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release as osRelease } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startLocalRedisServer } from '../lib/testing/local-redis-server.js';
import { bullmq, ours, type DelayContender } from './support/delay-contenders.js';
import { commandCounts, distribution, markdown, sleep, type Distribution } from './support/delay-stats.js';
import { describeVersions, stackVersions } from './support/stack-versions.js';
import { addUsage, cpuPerJob, UsageMeter, type CpuPerJob, type Usage } from './support/usage-meter.js';

const QUICK = process.env.BENCH_QUICK === '1';
const PLAN = {
  lateness: { jobs: QUICK ? 300 : 3000, spreadMs: 3000, leadMs: 500, concurrency: 16 },
  burst: { jobs: QUICK ? 1000 : 10_000, concurrency: 16, rounds: QUICK ? 2 : 4 },
  idle: { consumers: 10, settleMs: QUICK ? 1000 : 3000, windowMs: QUICK ? 5000 : 30_000 },
};
const TARGETS = { latenessP99Ms: 10, burstRatio: 3 };
/** BENCH_ONLY=a,b to run some scenarios only (while working on one); the report then has gaps. */
const ONLY = new Set((process.env.BENCH_ONLY ?? 'a,b,c').split(',').map((s) => s.trim()));
const RESULTS_DIR = join(import.meta.dirname, 'results');

interface ContenderResult {
  name: string;
  settings: string;
  lateness?: Distribution & { early: number; cpu: CpuPerJob; usage: Usage };
  /** Medians of the rounds; CPU over all rounds; `rounds` each round's own figures, in order. */
  burst?: BurstFigures & { cpu: CpuPerJob; rounds: BurstFigures[] };
  idle?: {
    consumers: number;
    windowMs: number;
    commandsPerSec: number;
    roundTripsPerSec: number;
    /** CPU ms per second of the window: this process (the idle consumers) and the Redis server. */
    clientCpuMsPerSec: number;
    redisCpuMsPerSec: number;
    byCommand: Record<string, number>;
    roundTripsByCommand: Record<string, number>;
  };
}

interface BurstFigures {
  jobs: number;
  enqueueMs: number;
  firstMs: number;
  drainMs: number;
  jobsPerSec: number;
  consumeJobsPerSec: number;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** (b) over its rounds: medians of the wall-clock figures, CPU and commands summed over every round's jobs. */
function burstSummary(rounds: readonly (BurstFigures & { usage: Usage })[]): NonNullable<ContenderResult['burst']> {
  const pick = (key: keyof BurstFigures) => median(rounds.map((r) => r[key]));
  const jobs = rounds.reduce((sum, r) => sum + r.jobs, 0);
  const cpu = cpuPerJob(addUsage(rounds.map((r) => r.usage)), jobs);
  return {
    jobs: rounds[0].jobs,
    enqueueMs: pick('enqueueMs'),
    firstMs: pick('firstMs'),
    drainMs: pick('drainMs'),
    jobsPerSec: pick('jobsPerSec'),
    consumeJobsPerSec: pick('consumeJobsPerSec'),
    cpu,
    rounds: rounds.map(({ usage: _usage, ...figures }) => figures),
  };
}

function progress(message: string): void {
  process.stderr.write(`[bench:delay] ${message}\n`);
}

async function main(): Promise<void> {
  const server = process.env.REDIS_URL ? undefined : await startLocalRedisServer();
  const url = process.env.REDIS_URL ?? server!.url;
  const admin = new Redis(url);
  const meter = new UsageMeter(admin);
  const loadAtStart = loadavg();
  const version = /redis_version:(\S+)/.exec(await admin.info('server'))?.[1] ?? 'unknown';
  progress(
    `Redis ${version} at ${url}${server ? ' (private redis-server)' : ' (REDIS_URL)'}; load ` +
      `${loadAtStart.map((l) => l.toFixed(2)).join(' ')}`,
  );
  let redisIdleMsPerSec = Number.NaN;

  const contenders: DelayContender[] = [ours(url), bullmq(url)];
  const results: ContenderResult[] = contenders.map((c) => ({ name: c.name, settings: c.settings }));

  // The same due times for both, so neither gets an easier spread.
  const delays = Array.from({ length: PLAN.lateness.jobs }, () => PLAN.lateness.leadMs + Math.random() * PLAN.lateness.spreadMs);

  try {
    for (const [i, contender] of ONLY.has('a') ? contenders.entries() : []) {
      progress(`(a) lateness: ${contender.name}, ${delays.length} jobs over ${PLAN.lateness.spreadMs} ms`);
      const { lateness, usage } = await contender.lateness(delays, PLAN.lateness.concurrency, meter);
      results[i].lateness = {
        ...distribution(lateness),
        early: lateness.filter((ms) => ms < 0).length,
        cpu: cpuPerJob(usage, delays.length),
        usage,
      };
    }
    const bursts = contenders.map((): (BurstFigures & { usage: Usage })[] => []);
    for (let round = 0; ONLY.has('b') && round < PLAN.burst.rounds; round++) {
      const order = round % 2 === 0 ? [...contenders.keys()] : [...contenders.keys()].reverse();
      for (const i of order) {
        const contender = contenders[i];
        progress(
          `(b) burst, round ${round + 1}/${PLAN.burst.rounds}: ${contender.name}, ${PLAN.burst.jobs} jobs ` +
            `due now, concurrency ${PLAN.burst.concurrency}`,
        );
        const { enqueueMs, firstMs, drainMs, usage } = await contender.burst(PLAN.burst.jobs, PLAN.burst.concurrency, meter);
        bursts[i].push({
          usage,
          jobs: PLAN.burst.jobs,
          enqueueMs,
          firstMs,
          drainMs,
          jobsPerSec: (PLAN.burst.jobs / drainMs) * 1000,
          consumeJobsPerSec: (PLAN.burst.jobs / (drainMs - firstMs)) * 1000,
        });
      }
    }
    bursts.forEach((rounds, i) => {
      if (rounds.length > 0) results[i].burst = burstSummary(rounds);
    });
    if (ONLY.has('c')) {
      // What the server spends with no consumer at all (its own cron, the bench's admin connection).
      const { usage } = await meter.measure(() => sleep(PLAN.idle.settleMs));
      redisIdleMsPerSec = usage.redisCpuMicros / PLAN.idle.settleMs;
    }
    for (const [i, contender] of ONLY.has('c') ? contenders.entries() : []) {
      progress(`(c) idle: ${contender.name}, ${PLAN.idle.consumers} consumers, ${PLAN.idle.windowMs / 1000} s window`);
      const stop = await contender.idle(PLAN.idle.consumers);
      await sleep(PLAN.idle.settleMs);
      const monitorClient = new Redis(url);
      const monitor = await monitorClient.monitor();
      const roundTripsByCommand: Record<string, number> = {};
      monitor.on('monitor', (_time: string, args: string[], source: string) => {
        if (source === 'lua') return;
        const command = String(args[0]).toLowerCase();
        if (command === 'info' || command === 'config') return;
        roundTripsByCommand[command] = (roundTripsByCommand[command] ?? 0) + 1;
      });
      await admin.config('RESETSTAT');
      const stopUsage = await meter.start();
      const started = performance.now();
      await sleep(PLAN.idle.windowMs);
      const elapsed = performance.now() - started;
      const usage = await stopUsage();
      const counts = await commandCounts(admin);
      monitor.disconnect();
      monitorClient.disconnect();
      await stop();
      const roundTrips = Object.values(roundTripsByCommand).reduce((a, b) => a + b, 0);
      const byCommand: Record<string, number> = {};
      let total = 0;
      for (const [command, calls] of counts) {
        if (command === 'info' || command === 'config|resetstat' || command === 'config') continue;
        byCommand[command] = calls;
        total += calls;
      }
      results[i].idle = {
        consumers: PLAN.idle.consumers,
        windowMs: elapsed,
        commandsPerSec: (total / elapsed) * 1000,
        roundTripsPerSec: (roundTrips / elapsed) * 1000,
        clientCpuMsPerSec: usage.clientCpuMicros / elapsed,
        redisCpuMsPerSec: usage.redisCpuMicros / elapsed,
        byCommand,
        roundTripsByCommand,
      };
    }
  } finally {
    admin.disconnect();
    await server?.stop();
  }

  const loadAtEnd = loadavg();
  progress(`load ${loadAtEnd.map((l) => l.toFixed(2)).join(' ')}`);
  const report = render(results, version, { loadAtStart, loadAtEnd, redisIdleMsPerSec });
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, 'delay-latest.md'), report.markdown);
  writeFileSync(join(RESULTS_DIR, 'delay-latest.json'), `${JSON.stringify(report.json, null, 2)}\n`);
  process.stdout.write(`${report.markdown}\n`);
}

interface RunConditions {
  readonly loadAtStart: number[];
  readonly loadAtEnd: number[];
  /** Redis CPU with no consumer connected, ms per second (the server's own floor). */
  readonly redisIdleMsPerSec: number;
}

/** A column of a results table: how to read it from a contender, and which way is better. */
interface Column {
  readonly header: string;
  readonly digits: number;
  /** 'higher' or 'lower' is better: the ratio row then reads > 1 when ours is better. 'none': no ratio. */
  readonly better: 'higher' | 'lower' | 'none';
  value(r: ContenderResult): number | undefined;
}

function render(results: ContenderResult[], redisVersion: string, run: RunConditions): { markdown: string; json: unknown } {
  const [mine, peer] = results;
  const fmt = (n: number | undefined, digits = 0) => (n === undefined || Number.isNaN(n) ? '–' : n.toFixed(digits));
  /** Rows per contender, then "ours vs <peer>" with ratios > 1 where ours is better. */
  const table = (columns: readonly Column[]) => {
    const rows = results.map((r) => [r.name, ...columns.map((c) => fmt(c.value(r), c.digits))]);
    const ratios = columns.map((c) => {
      const o = c.value(mine);
      const p = c.value(peer);
      if (c.better === 'none' || o === undefined || p === undefined) return '';
      const ratio = c.better === 'higher' ? o / p : p / o;
      return Number.isFinite(ratio) && ratio > 0 ? `${ratio.toFixed(2)}×` : '';
    });
    return markdown(['library', ...columns.map((c) => c.header)], [...rows, [`ours vs ${peer.name}`, ...ratios]]);
  };
  const speedTable = table([
    { header: '(a) lateness p50 ms', digits: 0, better: 'none', value: (r) => r.lateness?.p50 },
    { header: '(a) p99 ms', digits: 0, better: 'lower', value: (r) => r.lateness?.p99 },
    { header: '(a) max ms', digits: 0, better: 'lower', value: (r) => r.lateness?.max },
    { header: '(a) early', digits: 0, better: 'none', value: (r) => r.lateness?.early },
    { header: '(b) burst jobs/s', digits: 0, better: 'higher', value: (r) => r.burst?.jobsPerSec },
    { header: '(b) consume only jobs/s', digits: 0, better: 'higher', value: (r) => r.burst?.consumeJobsPerSec },
    { header: '(c) idle server cmds/s', digits: 2, better: 'lower', value: (r) => r.idle?.commandsPerSec },
    { header: '(c) idle round trips/s', digits: 2, better: 'lower', value: (r) => r.idle?.roundTripsPerSec },
  ]);
  const cpuTable = table([
    { header: '(a) bench CPU µs/job', digits: 0, better: 'lower', value: (r) => r.lateness?.cpu.clientMicros },
    { header: '(a) Redis CPU µs/job', digits: 0, better: 'lower', value: (r) => r.lateness?.cpu.redisMicros },
    { header: '(b) bench CPU µs/job', digits: 0, better: 'lower', value: (r) => r.burst?.cpu.clientMicros },
    { header: '(b) Redis CPU µs/job', digits: 0, better: 'lower', value: (r) => r.burst?.cpu.redisMicros },
    {
      header: '(b) bench + Redis µs/job',
      digits: 0,
      better: 'lower',
      value: (r) => (r.burst ? r.burst.cpu.clientMicros + r.burst.cpu.redisMicros : undefined),
    },
    { header: '(b) Redis commands/job', digits: 1, better: 'lower', value: (r) => r.burst?.cpu.redisCommands },
    { header: '(c) idle bench CPU ms/s', digits: 2, better: 'lower', value: (r) => r.idle?.clientCpuMsPerSec },
    { header: '(c) idle Redis CPU ms/s', digits: 2, better: 'lower', value: (r) => r.idle?.redisCpuMsPerSec },
  ]);
  // Round k of each contender ran minutes apart from the other rounds but next to the other's round k.
  const roundRatios = (mine.burst?.rounds ?? []).map((r, k) => r.jobsPerSec / (peer.burst?.rounds[k]?.jobsPerSec ?? Infinity));
  const burstRatio = roundRatios.length > 0 ? median(roundRatios) : 0;
  const checks = [
    {
      target: `(a) lateness p99 <= ${TARGETS.latenessP99Ms} ms, no early job`,
      value: `p99 ${fmt(mine.lateness?.p99)} ms, ${fmt(mine.lateness?.early)} early`,
      met: (mine.lateness?.p99 ?? Infinity) <= TARGETS.latenessP99Ms && mine.lateness?.early === 0,
    },
    {
      target: `(b) burst >= ${TARGETS.burstRatio}x BullMQ (median of per-round ratios)`,
      value: `${fmt(burstRatio, 2)}x (rounds: ${roundRatios.map((r) => `${fmt(r, 2)}x`).join(', ')})`,
      met: burstRatio >= TARGETS.burstRatio,
    },
    {
      target: '(c) idle commands/s <= BullMQ (server commands and client round trips)',
      value:
        `${fmt(mine.idle?.commandsPerSec, 2)} vs ${fmt(peer.idle?.commandsPerSec, 2)}; round ` +
        `trips ${fmt(mine.idle?.roundTripsPerSec, 2)} vs ${fmt(peer.idle?.roundTripsPerSec, 2)}`,
      met:
        (mine.idle?.commandsPerSec ?? Infinity) <= (peer.idle?.commandsPerSec ?? -Infinity) &&
        (mine.idle?.roundTripsPerSec ?? Infinity) <= (peer.idle?.roundTripsPerSec ?? -Infinity),
    },
  ];
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
  const versions = stackVersions(['ioredis', '@nestjs/core', 'bullmq']);
  const environment =
    `${platform()} ${osRelease()}, ${cpus().length} CPU (${cpus()[0]?.model ?? '?'}), load (1/5/15 ` +
    `min) ${load(run.loadAtStart)} at start, ` +
    `${load(run.loadAtEnd)} at end, Redis ${redisVersion}, ${describeVersions(versions)} (RESP3, ioredis 6's default, for both)` +
    `${QUICK ? ', QUICK run (not comparable)' : ''}`;
  const list = (counts: Record<string, number> | undefined) =>
    Object.entries(counts ?? {})
      .sort((a, b) => b[1] - a[1])
      .map(([c, n]) => `${c} ${n}`)
      .join(', ') || 'none';
  const idleDetail = results
    .map((r) => `${r.name}: server ${list(r.idle?.byCommand)}; round trips ${list(r.idle?.roundTripsByCommand)}`)
    .join(' — ');
  const markdownText = [
    '# Delayed jobs: nestjs-redis-lock vs BullMQ',
    '',
    `${new Date().toISOString()} — ${environment}`,
    '',
    speedTable,
    '',
    'CPU on both sides (compare these across runs: wall-clock figures move with whatever else shares the 2 CPUs):',
    '',
    cpuTable,
    '',
    '"ours vs bullmq": > 1 means ours is better (ours ÷ bullmq for jobs/s, bullmq ÷ ours for lateness, commands and CPU).',
    '',
    markdown(
      ['target', 'measured', 'met'],
      checks.map((c) => [c.target, c.value, c.met ? 'yes' : 'NO']),
    ),
    '',
    `(a) ${PLAN.lateness.jobs} jobs due ${PLAN.lateness.leadMs}–${PLAN.lateness.leadMs + PLAN.lateness.spreadMs} ` +
      `ms after one bulk enqueue, ` +
      (`concurrency ${PLAN.lateness.concurrency}. (b) ${PLAN.burst.jobs} jobs, enqueue included, ${PLAN.burst.rounds} ` +
        `rounds (medians; per round: jobs/s): `) +
      results
        .map(
          (r) =>
            `${r.name} enqueue ${fmt(r.burst?.enqueueMs)} ms, first handler ${fmt(r.burst?.firstMs)} ms, ` +
            `last ${fmt(r.burst?.drainMs)} ms ` +
            `(${(r.burst?.rounds ?? []).map((x) => fmt(x.jobsPerSec)).join(', ')})`,
        )
        .join('; ') +
      `. (c) commands over ${fmt((results[0].idle?.windowMs ?? 0) / 1000, 1)} s: ${idleDetail}.`,
    '',
    'CPU: "bench CPU" = user + system CPU of the bench process (process.cpuUsage), where both the producer and the consumer run; ' +
      ('"Redis CPU" = user + system CPU of the redis-server process (INFO cpu); "Redis commands" = calls ' +
        'in INFO commandstats, commands run inside scripts included. ') +
      (`(a) and (b) are measured from the enqueue to the last handler with the consumer already running, ` +
        `divided by the jobs; (a) therefore includes ${PLAN.lateness.leadMs + PLAN.lateness.spreadMs} ms ` +
        `of waiting for due times (timers, polling), (b) is throughput work. `) +
      (`(c) is per second of the idle window, with the MONITOR connection attached (it costs Redis a little ` +
        `per command); Redis with no consumer at all used ${fmt(run.redisIdleMsPerSec, 2)} ms/s.`),
    '',
    ...results.map((r) => `- ${r.name}: ${r.settings}`),
    '',
  ].join('\n');
  return {
    markdown: markdownText,
    json: { date: new Date().toISOString(), environment, versions, run, plan: PLAN, targets: TARGETS, results, checks },
  };
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
