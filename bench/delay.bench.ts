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
 * (c) idle cost: 10 consumers of an empty topic; Redis commands per second over a window: every
 *     command the server ran (INFO commandstats, which counts commands run inside scripts too; the
 *     bench's own INFO/CONFIG left out) and client round trips (MONITOR, script-internal commands left out).
 *
 * Writes bench/results/delay-latest.md and .json and exits.
 */
import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release as osRelease } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startLocalRedisServer } from '../tools/local-redis-server.js';
import { bullmq, ours, type DelayContender } from './support/delay-contenders.js';
import { commandCounts, distribution, markdown, sleep, type Distribution } from './support/delay-stats.js';

const QUICK = process.env.BENCH_QUICK === '1';
const PLAN = {
  lateness: { jobs: QUICK ? 300 : 3000, spreadMs: 3000, leadMs: 500, concurrency: 16 },
  burst: { jobs: QUICK ? 1000 : 10_000, concurrency: 16 },
  idle: { consumers: 10, settleMs: QUICK ? 1000 : 3000, windowMs: QUICK ? 5000 : 30_000 },
};
const TARGETS = { latenessP99Ms: 10, burstRatio: 2 };
/** BENCH_ONLY=a,b to run some scenarios only (while working on one); the report then has gaps. */
const ONLY = new Set((process.env.BENCH_ONLY ?? 'a,b,c').split(',').map((s) => s.trim()));
const RESULTS_DIR = join(import.meta.dirname, 'results');

interface ContenderResult {
  name: string;
  settings: string;
  lateness?: Distribution & { early: number };
  burst?: { jobs: number; enqueueMs: number; firstMs: number; drainMs: number; jobsPerSec: number; consumeJobsPerSec: number };
  idle?: {
    consumers: number;
    windowMs: number;
    commandsPerSec: number;
    roundTripsPerSec: number;
    byCommand: Record<string, number>;
    roundTripsByCommand: Record<string, number>;
  };
}

function progress(message: string): void {
  process.stderr.write(`[bench:delay] ${message}\n`);
}

async function main(): Promise<void> {
  const server = process.env.REDIS_URL ? undefined : await startLocalRedisServer();
  const url = process.env.REDIS_URL ?? server!.url;
  const admin = new Redis(url);
  const version = /redis_version:(\S+)/.exec(await admin.info('server'))?.[1] ?? 'unknown';
  progress(`Redis ${version} at ${url}${server ? ' (private redis-server)' : ' (REDIS_URL)'}`);

  const contenders: DelayContender[] = [ours(url), bullmq(url)];
  const results: ContenderResult[] = contenders.map((c) => ({ name: c.name, settings: c.settings }));

  // The same due times for both, so neither gets an easier spread.
  const delays = Array.from({ length: PLAN.lateness.jobs }, () => PLAN.lateness.leadMs + Math.random() * PLAN.lateness.spreadMs);

  try {
    for (const [i, contender] of ONLY.has('a') ? contenders.entries() : []) {
      progress(`(a) lateness: ${contender.name}, ${delays.length} jobs over ${PLAN.lateness.spreadMs} ms`);
      const lateness = await contender.lateness(delays, PLAN.lateness.concurrency);
      results[i].lateness = { ...distribution(lateness), early: lateness.filter((ms) => ms < 0).length };
    }
    for (const [i, contender] of ONLY.has('b') ? contenders.entries() : []) {
      progress(`(b) burst: ${contender.name}, ${PLAN.burst.jobs} jobs due now, concurrency ${PLAN.burst.concurrency}`);
      const { enqueueMs, firstMs, drainMs } = await contender.burst(PLAN.burst.jobs, PLAN.burst.concurrency);
      results[i].burst = {
        jobs: PLAN.burst.jobs,
        enqueueMs,
        firstMs,
        drainMs,
        jobsPerSec: (PLAN.burst.jobs / drainMs) * 1000,
        consumeJobsPerSec: (PLAN.burst.jobs / (drainMs - firstMs)) * 1000,
      };
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
      const started = performance.now();
      await sleep(PLAN.idle.windowMs);
      const counts = await commandCounts(admin);
      const elapsed = performance.now() - started;
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
        byCommand,
        roundTripsByCommand,
      };
    }
  } finally {
    admin.disconnect();
    await server?.stop();
  }

  const report = render(results, version);
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, 'delay-latest.md'), report.markdown);
  writeFileSync(join(RESULTS_DIR, 'delay-latest.json'), `${JSON.stringify(report.json, null, 2)}\n`);
  process.stdout.write(`${report.markdown}\n`);
}

function render(results: ContenderResult[], redisVersion: string): { markdown: string; json: unknown } {
  const [mine, peer] = results;
  const fmt = (n: number | undefined, digits = 0) => (n === undefined || Number.isNaN(n) ? '–' : n.toFixed(digits));
  const rows = results.map((r) => [
    r.name,
    fmt(r.lateness?.p50),
    fmt(r.lateness?.p99),
    fmt(r.lateness?.max),
    fmt(r.lateness?.early),
    fmt(r.burst?.jobsPerSec),
    fmt(r.burst?.consumeJobsPerSec),
    fmt(r.idle?.commandsPerSec, 2),
    fmt(r.idle?.roundTripsPerSec, 2),
  ]);
  const checks = [
    {
      target: `(a) lateness p99 <= ${TARGETS.latenessP99Ms} ms, no early job`,
      value: `p99 ${fmt(mine.lateness?.p99)} ms, ${fmt(mine.lateness?.early)} early`,
      met: (mine.lateness?.p99 ?? Infinity) <= TARGETS.latenessP99Ms && mine.lateness?.early === 0,
    },
    {
      target: `(b) burst >= ${TARGETS.burstRatio}x BullMQ`,
      value: `${fmt((mine.burst?.jobsPerSec ?? 0) / (peer.burst?.jobsPerSec ?? Infinity), 2)}x`,
      met: (mine.burst?.jobsPerSec ?? 0) >= TARGETS.burstRatio * (peer.burst?.jobsPerSec ?? Infinity),
    },
    {
      target: '(c) idle commands/s <= BullMQ (server commands and client round trips)',
      value: `${fmt(mine.idle?.commandsPerSec, 2)} vs ${fmt(peer.idle?.commandsPerSec, 2)}; round trips ${fmt(mine.idle?.roundTripsPerSec, 2)} vs ${fmt(peer.idle?.roundTripsPerSec, 2)}`,
      met:
        (mine.idle?.commandsPerSec ?? Infinity) <= (peer.idle?.commandsPerSec ?? -Infinity) &&
        (mine.idle?.roundTripsPerSec ?? Infinity) <= (peer.idle?.roundTripsPerSec ?? -Infinity),
    },
  ];
  const environment = `Node ${process.version}, ${platform()} ${osRelease()}, ${cpus().length} CPU (${cpus()[0]?.model ?? '?'}), load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}, Redis ${redisVersion}${QUICK ? ', QUICK run (not comparable)' : ''}`;
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
    markdown(
      [
        'library',
        '(a) lateness p50 ms',
        '(a) p99 ms',
        '(a) max ms',
        '(a) early',
        '(b) burst jobs/s',
        '(b) consume only jobs/s',
        '(c) idle server cmds/s',
        '(c) idle round trips/s',
      ],
      rows,
    ),
    '',
    markdown(['target', 'measured', 'met'], checks.map((c) => [c.target, c.value, c.met ? 'yes' : 'NO'])),
    '',
    `(a) ${PLAN.lateness.jobs} jobs due ${PLAN.lateness.leadMs}–${PLAN.lateness.leadMs + PLAN.lateness.spreadMs} ms after one bulk enqueue, ` +
      `concurrency ${PLAN.lateness.concurrency}. (b) ${PLAN.burst.jobs} jobs, enqueue included: ` +
      results
        .map((r) => `${r.name} enqueue ${fmt(r.burst?.enqueueMs)} ms, first handler ${fmt(r.burst?.firstMs)} ms, last ${fmt(r.burst?.drainMs)} ms`)
        .join('; ') +
      `. (c) commands over ${fmt((results[0].idle?.windowMs ?? 0) / 1000, 1)} s: ${idleDetail}.`,
    '',
    ...results.map((r) => `- ${r.name}: ${r.settings}`),
    '',
  ].join('\n');
  return { markdown: markdownText, json: { date: new Date().toISOString(), environment, plan: PLAN, targets: TARGETS, results, checks } };
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
