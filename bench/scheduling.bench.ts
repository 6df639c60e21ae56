/**
 * Scheduling benchmark (issue 15): what scheduled work costs Redis and the client while nothing
 * happens, and per tick, against BullMQ 6's job schedulers in the same run.
 *
 *   node --expose-gc --enable-source-maps --import ./tools/typescript-loader/register.js bench/scheduling.bench.ts
 *   SCHED_N=1,100,1000 SCHED_TICK_N=1,100 SCHED_IDLE_MS=20000 SCHED_TICK_MS=10000 SCHED_LEASES=100 SCHED_LEASE_MS=30000 …
 *
 * Scenarios, one after the other on one private redis-server (flushed in between), each measured
 * over a window with INFO cpu / commandstats (Redis) and process.cpuUsage (this process, the client):
 * - the server alone, and an application with RedisLockModule and nothing else (the floors);
 * - idle schedules: N schedules `cron: '* * * * *'` with a consumer of their topic, the window inside
 *   one minute, so no tick is due or running: the cost of a schedule existing (our periodic check;
 *   BullMQ's worker and its stalled-job check). BullMQ: `upsertJobScheduler(id, { pattern })` + Worker;
 * - running ticks: N schedules `every: 1000` and a consumer (default options on both sides): cost per tick;
 * - leases kept alive: `@LeaderElection` providers that lead and `@OnOneInstance` methods that hold
 *   their lease (each called once), default ttl (30 s, renewed every 10 s): cost per lease per second,
 *   above the bare application.
 *
 * Prints the tables and writes bench/results/scheduling-latest.md.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Injectable, Module, type INestApplicationContext, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { DelayQueueService, LeaderElection, LeaderElections, OnOneInstance, RedisLockModule, type LeadershipHooks } from '../lib/index.js';
import { provideBenchRedis, redisServerVersion } from './support/bench-redis.js';
import { bullmqConnection } from './support/bullmq-producer.js';
import { markdownTable } from './support/markdown-table.js';
import { describeVersions, stackVersions } from './support/stack-versions.js';
import { totalCalls, UsageMeter, type Usage } from './support/usage-meter.js';

const COUNTS = (process.env.SCHED_N ?? '1,100,1000').split(',').map(Number);
const TICK_COUNTS = (process.env.SCHED_TICK_N ?? '1,100').split(',').map(Number);
const IDLE_MS = Number(process.env.SCHED_IDLE_MS ?? 20_000);
const TICK_MS = Number(process.env.SCHED_TICK_MS ?? 10_000);
const LEASES = Number(process.env.SCHED_LEASES ?? 100);
const LEASE_MS = Number(process.env.SCHED_LEASE_MS ?? 30_000);
const TOPIC = 'bench.schedules';
/** Idle windows are measured in slices of one repeat-check period; the median slice is reported. */
const SLICE_MS = 5_000;

/** One measured window, in rates per second. */
interface Rates {
  readonly seconds: number;
  readonly redisCpuPerSec: number;
  readonly commandsPerSec: number;
  readonly clientCpuPerSec: number;
}

function rates(usage: Usage, ms: number): Rates {
  const seconds = ms / 1000;
  return {
    seconds,
    redisCpuPerSec: usage.redisCpuMicros / seconds,
    commandsPerSec: totalCalls(usage) / seconds,
    clientCpuPerSec: usage.clientCpuMicros / seconds,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const unique = (label: string) => `${label}-${randomBytes(3).toString('hex')}`;
const fixed = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

/** Measures `ms` of whatever runs now (after a full GC when node runs with --expose-gc, so the previous scenario's garbage is not
 * collected on this one's bill). */
async function window(meter: UsageMeter, ms: number): Promise<{ usage: Usage; ms: number }> {
  (globalThis as { gc?: () => void }).gc?.();
  await sleep(200);
  const stop = await meter.start();
  const started = performance.now();
  await sleep(ms);
  const usage = await stop();
  return { usage, ms: performance.now() - started };
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/**
 * Measures `ms` in slices of `sliceMs` and gives the median of each rate over the slices: a
 * one-off in one slice (code compiled on first use by the TypeScript loader's thread, a major GC, a
 * neighbour's burst on the shared Redis host) does not make the figure. Use a slice that holds a
 * whole period of the periodic work (the repeat check: 5 s).
 */
async function slicedWindow(meter: UsageMeter, ms: number, sliceMs: number): Promise<Rates> {
  const slices: Rates[] = [];
  for (let elapsed = 0; elapsed < ms; elapsed += sliceMs) {
    const { usage, ms: took } = await window(meter, sliceMs);
    slices.push(rates(usage, took));
  }
  return {
    seconds: slices.reduce((n, r) => n + r.seconds, 0),
    redisCpuPerSec: median(slices.map((r) => r.redisCpuPerSec)),
    commandsPerSec: median(slices.map((r) => r.commandsPerSec)),
    clientCpuPerSec: median(slices.map((r) => r.clientCpuPerSec)),
  };
}

/**
 * Waits until a window of `ms` starting now lies inside one minute, at least 10 s after its start
 * (the minute's ticks of up to 1000 schedules run and the next ones queued), so cron-each-minute
 * schedules have nothing due or running.
 */
async function inOneMinute(ms: number): Promise<void> {
  if (ms > 48_000) throw new Error('an idle window must fit in a minute: SCHED_IDLE_MS at most 48000');
  for (;;) {
    const second = (Date.now() % 60_000) / 1000;
    if (second >= 10 && second + ms / 1000 < 59) return;
    await sleep(250);
  }
}

async function ourApp(url: string, providers: Type[] = []): Promise<INestApplicationContext> {
  @Module({ imports: [RedisLockModule.forRoot({ redis: url, keyPrefix: unique('sched') })], providers })
  class BenchModule {}
  return NestFactory.createApplicationContext(BenchModule, { logger: ['error'] });
}

async function inBatches(count: number, size: number, run: (i: number) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < count; start += size) {
    await Promise.all(Array.from({ length: Math.min(size, count - start) }, (_, k) => run(start + k)));
  }
}

// ---- scenarios -----------------------------------------------------------------------------------

async function bareApp(url: string, meter: UsageMeter): Promise<Rates> {
  const app = await ourApp(url);
  try {
    await sleep(1_000);
    return await slicedWindow(meter, IDLE_MS, SLICE_MS);
  } finally {
    await app.close();
  }
}

async function ourSchedules(
  url: string,
  meter: UsageMeter,
  n: number,
  schedule: 'cron' | 'every',
): Promise<{ rates: Rates; ticks: number }> {
  const app = await ourApp(url);
  const queue = app.get(DelayQueueService);
  let ticks = 0;
  try {
    await inBatches(n, 50, (i) => queue.repeat(TOPIC, schedule === 'cron' ? { cron: '* * * * *' } : { every: 1_000 }, { id: `s${i}` }));
    queue.consume(TOPIC, () => {
      ticks++;
    });
    return await measureTicks(meter, schedule, () => ticks);
  } finally {
    await app.close();
  }
}

async function bullSchedulers(
  url: string,
  meter: UsageMeter,
  n: number,
  schedule: 'cron' | 'every',
): Promise<{ rates: Rates; ticks: number }> {
  const connection = bullmqConnection(url);
  const name = unique('sched');
  const queue = new Queue(name, { connection });
  let ticks = 0;
  const worker = new Worker(
    name,
    async () => {
      ticks++;
    },
    { connection, removeOnComplete: { count: 0 } },
  );
  try {
    await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
    await inBatches(n, 50, (i) =>
      queue.upsertJobScheduler(`s${i}`, schedule === 'cron' ? { pattern: '* * * * *' } : { every: 1_000 }, {
        name: 'tick',
        opts: { removeOnComplete: true },
      }),
    );
    return await measureTicks(meter, schedule, () => ticks);
  } finally {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
  }
}

/** Idle (cron): a window inside one minute. Every second: 3 s to settle, then a window of ticks. */
async function measureTicks(meter: UsageMeter, schedule: 'cron' | 'every', ticks: () => number): Promise<{ rates: Rates; ticks: number }> {
  if (schedule === 'cron') {
    await sleep(1_000);
    await inOneMinute(IDLE_MS);
  } else {
    await sleep(3_000);
  }
  const before = ticks();
  const measured = await slicedWindow(meter, schedule === 'cron' ? IDLE_MS : TICK_MS, schedule === 'cron' ? SLICE_MS : TICK_MS);
  return { rates: measured, ticks: ticks() - before };
}

function leaderClasses(count: number): Type[] {
  return Array.from({ length: count }, (_, i) => {
    class Leader implements LeadershipHooks {
      onLeadershipAcquired(): void {}
    }
    Object.defineProperty(Leader, 'name', { value: `BenchLeader${i}` });
    LeaderElection(`bench-leader-${i}`)(Leader);
    Injectable()(Leader);
    return Leader;
  });
}

function oneInstanceClass(count: number): Type & { methods: string[] } {
  class Jobs {}
  const methods: string[] = [];
  for (let i = 0; i < count; i++) {
    const method = `job${i}`;
    const descriptor: PropertyDescriptor = { value: async () => undefined, writable: true, configurable: true };
    OnOneInstance({ key: `bench-one-${i}` })(Jobs.prototype, method, descriptor);
    Object.defineProperty(Jobs.prototype, method, descriptor);
    methods.push(method);
  }
  Injectable()(Jobs);
  return Object.assign(Jobs, { methods });
}

async function leaders(url: string, meter: UsageMeter): Promise<Rates> {
  const classes = leaderClasses(LEASES);
  const app = await ourApp(url, classes);
  try {
    const elections = app.get(LeaderElections);
    for (let i = 0; i < LEASES; i++) {
      while (!elections.isLeader(`bench-leader-${i}`)) await sleep(50);
    }
    await sleep(1_000);
    const { usage, ms } = await window(meter, LEASE_MS);
    return rates(usage, ms);
  } finally {
    await app.close();
  }
}

async function oneInstanceLeases(url: string, meter: UsageMeter): Promise<Rates> {
  const Jobs = oneInstanceClass(LEASES);
  const app = await ourApp(url, [Jobs]);
  try {
    const jobs = app.get(Jobs) as unknown as Record<string, () => Promise<unknown>>;
    await Promise.all(Jobs.methods.map((method) => jobs[method]()));
    await sleep(1_000);
    const { usage, ms } = await window(meter, LEASE_MS);
    return rates(usage, ms);
  } finally {
    await app.close();
  }
}

// ---- report --------------------------------------------------------------------------------------

interface Line {
  readonly scenario: string;
  readonly contender: string;
  readonly n: number;
  readonly rates: Rates;
  readonly ticks?: number;
}

async function main(): Promise<void> {
  const redis = await provideBenchRedis();
  const admin = new Redis(redis.url);
  const meter = new UsageMeter(admin);
  const loadAtStart = loadavg();
  const redisVersion = await redisServerVersion(admin);
  const lines: Line[] = [];
  const log = (line: Line) => {
    lines.push(line);
    const r = line.rates;
    console.log(
      `${line.scenario.padEnd(14)} ${line.contender.padEnd(18)} n=${String(line.n).padStart(4)}  redis ` +
        `${fixed(r.redisCpuPerSec).padStart(8)} µs/s  ` +
        `${fixed(r.commandsPerSec).padStart(7)} cmd/s  client ${fixed(r.clientCpuPerSec).padStart(8)} µs/s` +
        (line.ticks === undefined ? '' : `  ticks ${line.ticks}`),
    );
  };
  try {
    const fresh = () => admin.flushall();
    await fresh();
    log({ scenario: 'floor', contender: 'redis-server alone', n: 0, rates: await slicedWindow(meter, IDLE_MS, SLICE_MS) });
    log({ scenario: 'floor', contender: 'ours (bare app)', n: 0, rates: await bareApp(redis.url, meter) });
    for (const n of COUNTS) {
      await fresh();
      const ours = await ourSchedules(redis.url, meter, n, 'cron');
      log({ scenario: 'idle schedule', contender: 'nestjs-redis-lock', n, ...ours });
      await fresh();
      const bull = await bullSchedulers(redis.url, meter, n, 'cron');
      log({ scenario: 'idle schedule', contender: 'bullmq', n, ...bull });
    }
    for (const n of TICK_COUNTS) {
      await fresh();
      log({ scenario: 'ticks (1 s)', contender: 'nestjs-redis-lock', n, ...(await ourSchedules(redis.url, meter, n, 'every')) });
      await fresh();
      log({ scenario: 'ticks (1 s)', contender: 'bullmq', n, ...(await bullSchedulers(redis.url, meter, n, 'every')) });
    }
    await fresh();
    log({ scenario: 'leases', contender: '@LeaderElection', n: LEASES, rates: await leaders(redis.url, meter) });
    await fresh();
    log({ scenario: 'leases', contender: '@OnOneInstance', n: LEASES, rates: await oneInstanceLeases(redis.url, meter) });
  } finally {
    admin.disconnect();
    await redis.stop();
  }
  const report = render(lines, { loadAtStart, loadAtEnd: loadavg(), redisVersion, source: redis.source });
  writeFileSync(join(import.meta.dirname, 'results', 'scheduling-latest.md'), report);
  console.log(`\n${report}`);
}

function render(
  lines: readonly Line[],
  machine: { loadAtStart: number[]; loadAtEnd: number[]; redisVersion: string; source: string },
): string {
  const find = (scenario: string, contender: string, n = 0) =>
    lines.find((l) => l.scenario === scenario && l.contender === contender && l.n === n);
  const serverFloor = find('floor', 'redis-server alone')!.rates;
  const appFloor = find('floor', 'ours (bare app)')!.rates;
  const out: string[] = [];
  out.push('# Scheduling benchmark (bench/scheduling.bench.ts)', '');
  out.push(
    `Machine: load ${machine.loadAtStart.map((l) => l.toFixed(1)).join(' ')} at ` +
      `start, ${machine.loadAtEnd.map((l) => l.toFixed(1)).join(' ')} at end; ` +
      `redis ${machine.redisVersion} (${machine.source}); ${describeVersions(stackVersions(['@nestjs/core', 'ioredis', 'bullmq']))}.`,
    '',
    'Redis CPU from INFO cpu (the whole server process), commands from INFO commandstats (including the',
    'commands scripts run), client CPU from process.cpuUsage of the bench process (one application or one',
    'BullMQ Queue + Worker at a time). Per-schedule and per-lease figures subtract the floors below.',
    `Floors and idle schedules: the median of ${SLICE_MS / 1000} s slices (one repeat-check period each), so a`,
    'one-off (first-use compilation, a major GC) does not make the figure. Ticks and leases: one window.',
    'The machine is shared (see the load): Redis CPU per schedule or lease is near the noise of the',
    "server's own cron at small N; commands are exact.",
    '',
  );
  out.push('## Floors', '');
  out.push(
    markdownTable(
      ['what runs', 'Redis CPU µs/s', 'commands/s', 'client CPU µs/s'],
      lines
        .filter((l) => l.scenario === 'floor')
        .map((l) => [l.contender, fixed(l.rates.redisCpuPerSec), fixed(l.rates.commandsPerSec, 2), fixed(l.rates.clientCpuPerSec)]),
      ['l', 'r', 'r', 'r'],
    ),
    '',
  );

  out.push(`## Idle schedules (cron each minute, a consumer running, no tick due in the ${IDLE_MS / 1000} s window)`, '');
  const idleRows: string[][] = [];
  for (const n of COUNTS) {
    const ours = find('idle schedule', 'nestjs-redis-lock', n);
    const bull = find('idle schedule', 'bullmq', n);
    if (!ours || !bull) continue;
    const perSchedule = (r: Rates, floor: Rates) => [
      (r.redisCpuPerSec - serverFloor.redisCpuPerSec) / n,
      r.commandsPerSec / n,
      (r.clientCpuPerSec - floor.clientCpuPerSec) / n,
    ];
    const o = perSchedule(ours.rates, appFloor);
    const b = perSchedule(bull.rates, { ...serverFloor, clientCpuPerSec: 0 });
    idleRows.push(
      [
        String(n),
        'nestjs-redis-lock',
        fixed(ours.rates.redisCpuPerSec),
        fixed(ours.rates.commandsPerSec, 2),
        fixed(o[0], 2),
        fixed(o[1], 3),
        fixed(o[2], 1),
        String(ours.ticks),
      ],
      [
        String(n),
        'bullmq',
        fixed(bull.rates.redisCpuPerSec),
        fixed(bull.rates.commandsPerSec, 2),
        fixed(b[0], 2),
        fixed(b[1], 3),
        fixed(b[2], 1),
        String(bull.ticks),
      ],
      [
        String(n),
        'ratio ours / bullmq',
        fixed(ours.rates.redisCpuPerSec / bull.rates.redisCpuPerSec, 2),
        fixed(ours.rates.commandsPerSec / bull.rates.commandsPerSec, 2),
        '',
        '',
        '',
        '',
      ],
    );
  }
  out.push(
    markdownTable(
      [
        'N',
        'contender',
        'Redis CPU µs/s',
        'commands/s',
        'Redis µs/s per schedule',
        'commands/s per schedule',
        'client µs/s per schedule',
        'ticks run',
      ],
      idleRows,
      ['r', 'l', 'r', 'r', 'r', 'r', 'r', 'r'],
    ),
    '',
    'Per schedule: Redis CPU above the server alone; client CPU above the bare application (ours) or',
    'above nothing (BullMQ: its Queue and Worker are all the client there is).',
    '',
  );

  out.push(`## Running ticks (every: 1000, default consumer options, ${TICK_MS / 1000} s window)`, '');
  const tickRows: string[][] = [];
  for (const n of TICK_COUNTS) {
    const ours = find('ticks (1 s)', 'nestjs-redis-lock', n);
    const bull = find('ticks (1 s)', 'bullmq', n);
    if (!ours || !bull) continue;
    const perTick = (line: Line, clientFloor: number) => {
      const ticksPerSec = line.ticks! / line.rates.seconds;
      return [
        ticksPerSec,
        (line.rates.redisCpuPerSec - serverFloor.redisCpuPerSec) / ticksPerSec,
        line.rates.commandsPerSec / ticksPerSec,
        (line.rates.clientCpuPerSec - clientFloor) / ticksPerSec,
      ];
    };
    const o = perTick(ours, appFloor.clientCpuPerSec);
    const b = perTick(bull, 0);
    tickRows.push(
      [String(n), 'nestjs-redis-lock', fixed(o[0], 1), fixed(o[1]), fixed(o[2], 1), fixed(o[3])],
      [String(n), 'bullmq', fixed(b[0], 1), fixed(b[1]), fixed(b[2], 1), fixed(b[3])],
      [String(n), 'ratio ours / bullmq', '', fixed(o[1] / b[1], 2), fixed(o[2] / b[2], 2), fixed(o[3] / b[3], 2)],
    );
  }
  out.push(
    markdownTable(['N', 'contender', 'ticks/s', 'Redis CPU µs per tick', 'commands per tick', 'client CPU µs per tick'], tickRows, [
      'r',
      'l',
      'r',
      'r',
      'r',
      'r',
    ]),
    '',
    'Per tick: the whole window (the idle cost included) divided by the ticks run in it.',
    '',
  );

  out.push(`## Leases kept alive (${LEASES} of each, default ttl 30 s, renewed every 10 s, ${LEASE_MS / 1000} s window)`, '');
  out.push(
    markdownTable(
      ['lease', 'Redis CPU µs/s', 'commands/s', 'Redis µs/s per lease', 'commands/s per lease', 'client µs/s per lease'],
      lines
        .filter((l) => l.scenario === 'leases')
        .map((l) => [
          l.contender,
          fixed(l.rates.redisCpuPerSec),
          fixed(l.rates.commandsPerSec, 2),
          fixed((l.rates.redisCpuPerSec - serverFloor.redisCpuPerSec) / l.n, 2),
          fixed(l.rates.commandsPerSec / l.n, 3),
          fixed((l.rates.clientCpuPerSec - appFloor.clientCpuPerSec) / l.n, 2),
        ]),
      ['l', 'r', 'r', 'r', 'r', 'r'],
    ),
    '',
    'Leases: Redis CPU above the server alone, client CPU above the bare application.',
    '',
  );
  return out.join('\n');
}

await main();
