/**
 * Scale checks (issue 17), ours against the peers, on a private Redis:
 *
 * 1. Many held locks: one process takes SCALE_LOCKS (10,000) locks and keeps them with each
 *    library's own renewal (ours: the watchdog, one batched script per third of the lease;
 *    redis-semaphore: its refresh timer per Mutex; redlock: `using()`'s automatic extension), for
 *    a few renewal periods. Reported: Redis CPU and commands per second spent renewing, client CPU
 *    per second, client memory per held lock (heap + external after a GC, less the same before).
 * 2. Many waiters on one key: 4 processes × 64 workers loop acquire → hold 1 ms → release on one
 *    key for SCALE_WAIT_MS. Reported: acquisitions/s, handoff gap p50/p99 (one hold's release()
 *    call to the next hold's acquire resolving, across processes), acquisitions per worker min/max,
 *    Jain's fairness index over workers (1 = all equal), share of the busiest process.
 *
 *   node --expose-gc --import ./tools/typescript-loader/register.js bench/scale.bench.ts
 *   SCALE_LOCKS=2000 SCALE_WAIT_MS=3000 …   (a quicker run)
 *
 * Writes bench/results/scale-latest.md.
 */
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { Redlock } from '@sesamecare-oss/redlock';
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import { LockService, RedisLockModule, type LockHandle } from '../lib/index.js';
import { provideBenchRedis, redisServerVersion } from './support/bench-redis.js';
import { markdownTable } from './support/markdown-table.js';
import { percentile, sleep } from './support/stats.js';
import { describeVersions, stackVersions } from './support/stack-versions.js';
import { totalCalls, UsageMeter } from './support/usage-meter.js';

const LOCKS = Number(process.env.SCALE_LOCKS ?? 10_000);
/** Lease of the held locks: short, so that a few renewal periods fit in a bench run. */
const HELD_LEASE_MS = 3_000;
/** How long the held locks are kept and measured. */
const HOLD_WINDOW_MS = Number(process.env.SCALE_HOLD_MS ?? 9_000);
const WAIT_MS = Number(process.env.SCALE_WAIT_MS ?? 5_000);
const PROCESSES = 4;
const WORKERS_PER_PROCESS = 64;
const HOLD_MS = 1;

interface HeldResult {
  readonly name: string;
  readonly settings: string;
  readonly redisCpuPerSec: number;
  readonly redisCommandsPerSec: number;
  readonly clientCpuPerSec: number;
  readonly bytesPerLock: number;
  readonly acquireSeconds: number;
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

function memory(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external + m.arrayBuffers;
}

/** Takes `LOCKS` locks with `take` (in batches), keeps them HOLD_WINDOW_MS, measures, lets go. */
async function heldLocks(
  meter: UsageMeter,
  name: string,
  settings: string,
  take: (key: string) => Promise<() => Promise<unknown>>,
): Promise<HeldResult> {
  try {
    return await measureHeldLocks(meter, name, settings, take);
  } catch (error) {
    process.stderr.write(`[scale] ${name} failed: ${String(error)}\n`);
    const failed = Number.NaN;
    return {
      name,
      settings: `${settings}; FAILED: ${error instanceof Error ? error.message : String(error)}`,
      redisCpuPerSec: failed,
      redisCommandsPerSec: failed,
      clientCpuPerSec: failed,
      bytesPerLock: failed,
      acquireSeconds: failed,
    };
  }
}

async function measureHeldLocks(
  meter: UsageMeter,
  name: string,
  settings: string,
  take: (key: string) => Promise<() => Promise<unknown>>,
): Promise<HeldResult> {
  const before = memory();
  const started = performance.now();
  const releases: (() => Promise<unknown>)[] = [];
  for (let i = 0; i < LOCKS; i += 500) {
    releases.push(...(await Promise.all(Array.from({ length: Math.min(500, LOCKS - i) }, (_, j) => take(`held:${i + j}`)))));
  }
  const acquireSeconds = (performance.now() - started) / 1000;
  const bytesPerLock = (memory() - before) / LOCKS;
  const stop = await meter.start();
  const windowStart = performance.now();
  await sleep(HOLD_WINDOW_MS);
  const usage = await stop();
  const seconds = (performance.now() - windowStart) / 1000;
  for (let i = 0; i < releases.length; i += 500) await Promise.all(releases.slice(i, i + 500).map((release) => release()));
  return {
    name,
    settings,
    redisCpuPerSec: usage.redisCpuMicros / seconds,
    redisCommandsPerSec: totalCalls(usage) / seconds,
    clientCpuPerSec: usage.clientCpuMicros / seconds,
    bytesPerLock,
    acquireSeconds,
  };
}

interface WaitResult {
  readonly name: string;
  readonly acquisitionsPerSec: number;
  readonly handoffP50: number;
  readonly handoffP99: number;
  readonly perWorkerMin: number;
  readonly perWorkerMax: number;
  readonly jain: number;
  readonly busiestProcessShare: number;
  readonly overlaps: number;
  readonly failures: number;
}

type Hold = [worker: number, acquiredAt: number, releaseCalledAt: number, releasedAt: number];

interface WaiterProcess {
  readonly ready: Promise<void>;
  start(startAt: number): void;
  readonly result: Promise<{ holds: Hold[]; failures: number }>;
}

/** Starts one waiter process (support/waiter-process.ts); it reports ready, then runs from the start time sent to it. */
function startWaiterProcess(contender: string, url: string, key: string, index: number): WaiterProcess {
  const args = [
    '--enable-source-maps',
    '--import',
    './tools/typescript-loader/register.js',
    join(import.meta.dirname, 'support', 'waiter-process.ts'),
    contender,
    url,
    key,
    String(WORKERS_PER_PROCESS),
    String(WAIT_MS),
    String(HOLD_MS),
    String(index),
  ];
  const child = spawn(process.execPath, args, { cwd: join(import.meta.dirname, '..'), stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    if (out.startsWith('ready\n')) markReady();
  });
  const result = new Promise<{ holds: Hold[]; failures: number }>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').pop()!))
        : reject(new Error(`${contender} process ${index} exited with ${code}`)),
    );
  });
  return { ready: Promise.race([ready, result.then(() => undefined)]), start: (startAt) => child.stdin.end(`${startAt}\n`), result };
}

async function manyWaiters(url: string, name: string, runId: string): Promise<WaitResult> {
  const key = `${runId}:wait:${name}`;
  const processes = Array.from({ length: PROCESSES }, (_, i) => startWaiterProcess(name, url, key, i));
  await Promise.all(processes.map((p) => p.ready));
  const startAt = performance.timeOrigin + performance.now() + 200;
  for (const p of processes) p.start(startAt);
  const runs = await Promise.all(processes.map((p) => p.result));
  const holds = runs.flatMap((r) => r.holds).sort((x, y) => x[1] - y[1]);
  const handoffs: number[] = [];
  let overlaps = 0;
  for (let i = 1; i < holds.length; i++) {
    handoffs.push(Math.max(0, holds[i][1] - holds[i - 1][2]));
    if (holds[i][1] < holds[i - 1][2]) overlaps++;
  }
  handoffs.sort((x, y) => x - y);
  const perWorker = new Array<number>(PROCESSES * WORKERS_PER_PROCESS).fill(0);
  for (const [worker] of holds) perWorker[worker]++;
  const sum = perWorker.reduce((n, v) => n + v, 0);
  const squares = perWorker.reduce((n, v) => n + v * v, 0);
  const perProcess = Array.from({ length: PROCESSES }, (_, p) =>
    perWorker.slice(p * WORKERS_PER_PROCESS, (p + 1) * WORKERS_PER_PROCESS).reduce((n, v) => n + v, 0),
  );
  const inWindow = holds.filter(([, acquiredAt]) => acquiredAt >= startAt && acquiredAt < startAt + WAIT_MS).length;
  return {
    name,
    acquisitionsPerSec: inWindow / (WAIT_MS / 1000),
    handoffP50: percentile(handoffs, 50),
    handoffP99: percentile(handoffs, 99),
    perWorkerMin: Math.min(...perWorker),
    perWorkerMax: Math.max(...perWorker),
    jain: sum === 0 ? 0 : (sum * sum) / (perWorker.length * squares),
    busiestProcessShare: sum === 0 ? 0 : Math.max(...perProcess) / sum,
    overlaps,
    failures: runs.reduce((n, r) => n + r.failures, 0),
  };
}

async function main(): Promise<void> {
  const redis = await provideBenchRedis();
  const admin = new Redis(redis.url);
  const meter = new UsageMeter(admin);
  const runId = Math.random().toString(16).slice(2, 8);
  const loadAtStart = loadavg();
  const redisVersion = await redisServerVersion(admin);
  const held: HeldResult[] = [];
  const waits: WaitResult[] = [];
  try {
    // 1. Many held locks, each library renewing its own way.
    {
      const app = await NestFactory.createApplicationContext(
        RedisLockModule.forRoot({ redis: redis.url, keyPrefix: `scale:${runId}`, lock: { leaseTime: HELD_LEASE_MS } }),
        { logger: false },
      );
      const locks = app.get(LockService);
      process.stderr.write(`[scale] ${LOCKS} held locks: ours (watchdog)\n`);
      held.push(
        await heldLocks(
          meter,
          'ours (watchdog)',
          `LockService.acquire(key), lease ${HELD_LEASE_MS} ms renewed every third`,
          async (key) => {
            const handle: LockHandle = await locks.acquire(key);
            return () => handle.release();
          },
        ),
      );
      await app.close();
    }
    {
      const client = new Redis(redis.url);
      process.stderr.write(`[scale] ${LOCKS} held locks: redis-semaphore\n`);
      held.push(
        await heldLocks(
          meter,
          'redis-semaphore',
          `new Mutex(client, key, { lockTimeout: ${HELD_LEASE_MS} }) (refresh at 80 % of it)`,
          async (key) => {
            const mutex = new Mutex(client, `scale:${runId}:sem:${key}`, { lockTimeout: HELD_LEASE_MS, acquireTimeout: 10_000 });
            await mutex.acquire();
            return () => mutex.release();
          },
        ),
      );
      client.disconnect();
    }
    {
      const client = new Redis(redis.url);
      // Distinct keys never contend: retries only cover a loaded machine's slow replies.
      const redlock = new Redlock([client], { automaticExtensionThreshold: 500, retryCount: 100 });
      redlock.on('error', () => undefined);
      process.stderr.write(`[scale] ${LOCKS} held locks: redlock\n`);
      held.push(
        await heldLocks(meter, 'redlock', `redlock.using([key], ${HELD_LEASE_MS}, routine) (extends 500 ms before the end)`, (key) => {
          let acquired!: () => void;
          let letGo!: () => void;
          const taken = new Promise<void>((resolve) => (acquired = resolve));
          const done = new Promise<void>((resolve) => (letGo = resolve));
          const using = redlock.using([`scale:${runId}:redlock:${key}`], HELD_LEASE_MS, async () => {
            acquired();
            await done;
          });
          return taken.then(() => () => {
            letGo();
            return using;
          });
        }),
      );
      client.disconnect();
    }

    // 2. Many waiters on one key, four processes.
    for (const name of ['ours', 'ours (fair)', 'raw', 'redlock', 'redis-semaphore']) {
      process.stderr.write(`[scale] ${PROCESSES} × ${WORKERS_PER_PROCESS} waiters on one key: ${name}\n`);
      try {
        waits.push(await manyWaiters(redis.url, name, runId));
      } catch (error) {
        process.stderr.write(`[scale] ${name} failed: ${String(error)}\n`);
      }
    }
  } finally {
    admin.disconnect();
    await redis.stop();
  }

  const n = (value: number, digits = 0) => value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  const markdown = [
    '# Scale checks',
    '',
    `bench/scale.bench.ts, ${new Date().toISOString()}. Redis ${redisVersion} (private), ` +
      describeVersions(stackVersions(['ioredis', 'redis-semaphore', '@sesamecare-oss/redlock'])) +
      `; load ${loadAtStart.map((l) => l.toFixed(2)).join(' ')} → ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}.`,
    '',
    `## ${n(LOCKS)} locks held by one process, kept alive by each library (lease ${HELD_LEASE_MS} ms, ` +
      `measured over ${HOLD_WINDOW_MS / 1000} s)`,
    '',
    markdownTable(
      [
        'contender',
        'Redis CPU ms/s renewing',
        'Redis commands/s',
        'client CPU ms/s',
        'client memory per held lock (bytes)',
        'time to take them all (s)',
      ],
      held.map((h) => [
        h.name,
        n(h.redisCpuPerSec / 1000, 1),
        n(h.redisCommandsPerSec),
        n(h.clientCpuPerSec / 1000, 1),
        n(h.bytesPerLock),
        n(h.acquireSeconds, 2),
      ]),
      ['l', 'r', 'r', 'r', 'r', 'r'],
    ),
    '',
    ...held.map((h) => `- **${h.name}**: ${h.settings}`),
    '',
    'Renewal cost scales with 1 / lease: with the default 30 s lease ours renews every 10 s, a tenth of the rate above.',
    '',
    `## ${PROCESSES} processes × ${WORKERS_PER_PROCESS} waiters on one key (hold ${HOLD_MS} ms, ${WAIT_MS / 1000} s)`,
    '',
    markdownTable(
      [
        'contender',
        'acquisitions/s',
        'handoff p50 (ms)',
        'handoff p99 (ms)',
        'per worker min / max',
        "Jain's fairness (1 = equal)",
        'busiest process share',
        'overlaps (must be 0)',
        'failed acquires',
      ],
      waits.map((w) => [
        w.name,
        n(w.acquisitionsPerSec),
        n(w.handoffP50, 2),
        n(w.handoffP99, 2),
        `${w.perWorkerMin} / ${w.perWorkerMax}`,
        n(w.jain, 3),
        `${n(w.busiestProcessShare * 100)} %`,
        String(w.overlaps),
        String(w.failures),
      ]),
      ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
    ),
    '',
    "Handoff: one hold's release() call to the next hold's acquire resolving, in whichever process, on the machine's common clock " +
      ('(performance.timeOrigin + now()). Overlaps are counted from those same stamps (acquire resolved ' +
        'before the previous holder called release()). ') +
      'Peers retry on their own timers (raw 5 ms, redlock 10 ± 5 ms, redis-semaphore 10 ms); ours waits on pub/sub.',
    '',
  ].join('\n');
  process.stdout.write(`${markdown}\n`);
  mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
  writeFileSync(join(import.meta.dirname, 'results', 'scale-latest.md'), markdown);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
