/**
 * Lock benchmark: this library's LockService against the floor (raw SET NX + compare-and-delete)
 * and two peers (@sesamecare-oss/redlock, redis-semaphore), side by side on the same Redis.
 *
 *   npm run bench:locks            (REDIS_URL=redis://… to use a server of yours instead of a private one)
 *   BENCH_QUICK=1 npm run bench:locks   (a smoke run: every phase a fraction as long; numbers not comparable)
 *
 * Scenarios (a) uncontended sequential acquire + release, (b) 64 callers on distinct keys,
 * (c) 16 workers on one hot key; then a short profile of Redis round trips per operation through
 * MONITOR (separate from the timed runs, since MONITOR slows Redis down). Next to the wall-clock
 * figures, CPU per operation on both sides: this process (process.cpuUsage) and the Redis server
 * (INFO cpu, INFO commandstats), measured over the same timed stretches. Writes
 * bench/results/locks-latest.md and .json.
 *
 *   BENCH_RESP=2 npm run bench:locks    (every contender on RESP2 instead of ioredis 6's default RESP3;
 *                                        writes locks-resp2-latest.* so the two runs can be compared)
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release as osRelease, totalmem } from 'node:os';
import { join } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { LockService, RedisLockModule } from '../lib/index.js';
import {
  clientShareOf,
  countRoundTrips,
  provideBenchRedis,
  redisServerVersion,
  type BenchRedis,
  type CommandProfile,
} from './support/bench-redis.js';
import {
  BENCH_PROTOCOL,
  createOurContenders,
  createRawContender,
  createRedlockContender,
  createSemaphoreContender,
  type LockContender,
} from './support/lock-contenders.js';
import { mergeHotKeyRuns, runHotKey, runParallel, runSequential, type HotKeyResult } from './support/lock-scenarios.js';
import { markdownTable } from './support/markdown-table.js';
import { runReadWrite, type ReadWriteResult } from './support/read-write-scenario.js';
import { summarize, type LatencySummary } from './support/stats.js';
import { describeVersions, stackVersions } from './support/stack-versions.js';
import { addUsage, commandMicros, totalCalls, UsageMeter, type Usage } from './support/usage-meter.js';

const QUICK = process.env.BENCH_QUICK === '1';
const scale = (ms: number) => (QUICK ? Math.max(1, Math.round(ms / 5)) : ms);

const PLAN = {
  sequential: { warmup: scale(500), iterations: scale(600), rounds: 8 },
  parallel: { width: 64, warmupMs: scale(300), durationMs: scale(350), rounds: 6 },
  hotKey: { workers: 16, warmupMs: scale(500), durationMs: scale(2500), rounds: 2, holdMs: 1, thinkMs: 2 },
  profile: { pairs: scale(300), hotKeyMs: scale(1000) },
  readWrite: { workers: 16, writeShare: 0.2, holdMs: 1, thinkMs: 2, durationMs: scale(2500) },
};

/** Contenders ours is compared with (ratios and targets); the other `ours (…)` variants are shown for information. */
const PEERS = ['raw', 'redlock', 'redis-semaphore'] as const;
const OURS = 'ours';
/** Variants of ours whose (c) results are also checked against the targets, for information. */
const INFO_TARGETS = ['ours (fair)'];
const RESULTS_DIR = join(import.meta.dirname, 'results');
const RESULTS_NAME = BENCH_PROTOCOL === undefined ? 'locks-latest' : `locks-resp${BENCH_PROTOCOL}-latest`;

/** CPU per operation on both sides, over the timed stretches of one scenario (µs per operation). */
interface CpuPerOperation {
  /** This process (process.cpuUsage). */
  readonly clientMicros: number;
  /** The redis-server process (INFO cpu): execution, I/O and protocol work. */
  readonly redisMicros: number;
  /** Command execution alone (INFO commandstats), each command counted once (see usage-meter.ts). */
  readonly redisCommandMicros: number;
  /** Commands Redis ran, including those inside scripts (INFO commandstats). */
  readonly redisCommands: number;
}

interface ContenderResult {
  readonly name: string;
  readonly settings: string;
  sequential?: {
    opsPerSec: number;
    latencyMs: LatencySummary;
    roundsOpsPerSec: number[];
    cpuMicrosPerPair: number;
    usage: Usage;
    cpu?: CpuPerOperation;
  };
  parallel?: { opsPerSec: number; roundsOpsPerSec: number[]; cpuMicrosPerPair: number; usage: Usage; cpu?: CpuPerOperation };
  hotKey?: HotKeyResult & { acquisitionsPerSec: number; usage: Usage; cpu?: CpuPerOperation };
  roundTrips?: {
    perPair: number;
    perPairByCommand: Record<string, number>;
    perHotAcquisition: number;
    perHotAcquisitionByCommand: Record<string, number>;
  };
}

function progress(message: string): void {
  process.stderr.write(`[bench:locks] ${message}\n`);
}

/** Runs `fn` for every contender, starting each round one contender later so no one is always first. */
async function inRotation(contenders: LockContender[], round: number, fn: (c: LockContender) => Promise<void>): Promise<void> {
  for (let i = 0; i < contenders.length; i++) await fn(contenders[(i + round) % contenders.length]);
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const loadAtStart = loadavg();
  const redis: BenchRedis = await provideBenchRedis();
  const admin = new Redis(redis.url);
  const meter = new UsageMeter(admin);
  const contenders: LockContender[] = [];
  const runId = randomBytes(3).toString('hex');
  try {
    const redisVersion = await redisServerVersion(admin);
    progress(
      `Redis ${redisVersion} (${redis.source}) at ${redis.url}; run id ${runId}; ` +
        `RESP${BENCH_PROTOCOL ?? ' default (3)'}${QUICK ? '; QUICK mode' : ''}; load ${loadAtStart.map((l) => l.toFixed(2)).join(' ')}`,
    );
    contenders.push(
      ...(await createOurContenders(redis.url, 'bench')),
      await createRawContender(redis.url, `bench:raw`),
      await createRedlockContender(redis.url, `bench:redlock`),
      await createSemaphoreContender(redis.url, `bench:sem`),
    );
    const results = new Map<string, ContenderResult>(contenders.map((c) => [c.name, { name: c.name, settings: c.settings }]));
    const result = (c: LockContender) => results.get(c.name)!;

    // (a) uncontended sequential
    const seqSamples = new Map<
      string,
      { latencies: number[]; pairs: number; elapsedMs: number; cpuMicros: number; rounds: number[]; usage: Usage[] }
    >();
    for (const c of contenders) {
      await runSequential(c, `${runId}:seq`, { warmup: PLAN.sequential.warmup, iterations: 0 });
      seqSamples.set(c.name, { latencies: [], pairs: 0, elapsedMs: 0, cpuMicros: 0, rounds: [], usage: [] });
    }
    for (let round = 0; round < PLAN.sequential.rounds; round++) {
      progress(`(a) sequential, round ${round + 1}/${PLAN.sequential.rounds}`);
      await inRotation(contenders, round, async (c) => {
        const { result: r, usage } = await meter.measure(() =>
          runSequential(c, `${runId}:seq`, { warmup: 0, iterations: PLAN.sequential.iterations }),
        );
        const acc = seqSamples.get(c.name)!;
        acc.usage.push(usage);
        acc.latencies.push(...r.latencies);
        acc.pairs += r.pairs;
        acc.elapsedMs += r.elapsedMs;
        acc.cpuMicros += r.cpuMicros;
        acc.rounds.push((r.pairs / r.elapsedMs) * 1000);
      });
    }
    for (const c of contenders) {
      const acc = seqSamples.get(c.name)!;
      result(c).sequential = {
        opsPerSec: (acc.pairs / acc.elapsedMs) * 1000,
        latencyMs: summarize(acc.latencies),
        roundsOpsPerSec: acc.rounds,
        cpuMicrosPerPair: acc.cpuMicros / acc.pairs,
        usage: addUsage(acc.usage),
      };
    }

    // (b) 64-way parallel, distinct keys
    const parSamples = new Map<string, { pairs: number; elapsedMs: number; cpuMicros: number; rounds: number[]; usage: Usage[] }>();
    for (const c of contenders) {
      await runParallel(c, `${runId}:par`, { width: PLAN.parallel.width, durationMs: PLAN.parallel.warmupMs });
      parSamples.set(c.name, { pairs: 0, elapsedMs: 0, cpuMicros: 0, rounds: [], usage: [] });
    }
    for (let round = 0; round < PLAN.parallel.rounds; round++) {
      progress(`(b) ${PLAN.parallel.width}-way parallel, round ${round + 1}/${PLAN.parallel.rounds}`);
      await inRotation(contenders, round, async (c) => {
        const { result: r, usage } = await meter.measure(() =>
          runParallel(c, `${runId}:par`, { width: PLAN.parallel.width, durationMs: PLAN.parallel.durationMs }),
        );
        const acc = parSamples.get(c.name)!;
        acc.usage.push(usage);
        acc.pairs += r.pairs;
        acc.elapsedMs += r.elapsedMs;
        acc.cpuMicros += r.cpuMicros;
        acc.rounds.push((r.pairs / r.elapsedMs) * 1000);
      });
    }
    for (const c of contenders) {
      const acc = parSamples.get(c.name)!;
      result(c).parallel = {
        opsPerSec: (acc.pairs / acc.elapsedMs) * 1000,
        roundsOpsPerSec: acc.rounds,
        cpuMicrosPerPair: acc.cpuMicros / acc.pairs,
        usage: addUsage(acc.usage),
      };
    }

    // (c) one hot key, in rounds so that a change in background load hits every contender alike
    for (const c of contenders) await runHotKey(c, `${runId}:hot`, { ...PLAN.hotKey, durationMs: PLAN.hotKey.warmupMs });
    const hotRuns = new Map<string, HotKeyResult[]>(contenders.map((c) => [c.name, []]));
    const hotUsage = new Map<string, Usage[]>(contenders.map((c) => [c.name, []]));
    for (let round = 0; round < PLAN.hotKey.rounds; round++) {
      progress(`(c) hot key, ${PLAN.hotKey.workers} workers, round ${round + 1}/${PLAN.hotKey.rounds} × ${PLAN.hotKey.durationMs} ms each`);
      await inRotation(contenders, round, async (c) => {
        const { result, usage } = await meter.measure(() => runHotKey(c, `${runId}:hot`, PLAN.hotKey));
        hotRuns.get(c.name)!.push(result);
        hotUsage.get(c.name)!.push(usage);
      });
    }
    for (const c of contenders) {
      const merged = mergeHotKeyRuns(hotRuns.get(c.name)!);
      result(c).hotKey = {
        ...merged,
        acquisitionsPerSec: (merged.acquisitionsInWindow / merged.windowMs) * 1000,
        usage: addUsage(hotUsage.get(c.name)!),
      };
    }

    // (d) read/write lock under contention (ours only: the peers have no read/write lock)
    progress(`(d) read/write lock, ${PLAN.readWrite.workers} workers, ${PLAN.readWrite.writeShare * 100} % writes`);
    const rwApp = await NestFactory.createApplicationContext(
      RedisLockModule.forRoot({ redis: redis.url, keyPrefix: `bench:${runId}:rw` }),
      { logger: false },
    );
    const readWrite: ReadWriteResult[] = [];
    try {
      const rwLocks = rwApp.get(LockService);
      for (const variant of ['read/write lock', 'exclusive lock'] as const) {
        readWrite.push(await runReadWrite(rwLocks, 'doc', variant, PLAN.readWrite));
      }
    } finally {
      await rwApp.close();
    }

    // Round trips per operation, counted by MONITOR in runs that are not timed.
    progress('profile: Redis round trips per operation (MONITOR, untimed)');
    for (const c of contenders) {
      const seq = await countRoundTrips(redis.url, async () => {
        await runSequential(c, `${runId}:prof-seq`, { warmup: 0, iterations: PLAN.profile.pairs });
      });
      let hot: HotKeyResult | undefined;
      const hotCounts = await countRoundTrips(redis.url, async () => {
        hot = await runHotKey(c, `${runId}:prof-hot`, { ...PLAN.hotKey, durationMs: PLAN.profile.hotKeyMs });
      });
      const pair = perOperation(seq.fromClients, PLAN.profile.pairs);
      const acquisition = perOperation(hotCounts.fromClients, Math.max(1, hot!.acquisitions));
      const r = result(c);
      r.roundTrips = {
        perPair: pair.total,
        perPairByCommand: pair.byCommand,
        perHotAcquisition: acquisition.total,
        perHotAcquisitionByCommand: acquisition.byCommand,
      };
      // CPU per operation, now that the profile tells which commands came from scripts.
      const { sequential, parallel, hotKey } = r;
      if (sequential) sequential.cpu = cpuPerOperation(sequential.usage, sequential.cpuMicrosPerPair, seq, seqSamples.get(c.name)!.pairs);
      if (parallel) parallel.cpu = cpuPerOperation(parallel.usage, parallel.cpuMicrosPerPair, seq, parSamples.get(c.name)!.pairs);
      if (hotKey) {
        // Every acquisition of the rounds, wind-down included: the usage covers all of them.
        const acquisitions = Math.max(1, hotKey.acquisitions);
        hotKey.cpu = cpuPerOperation(hotKey.usage, hotKey.usage.clientCpuMicros / acquisitions, hotCounts, acquisitions);
      }
    }

    const machine = {
      date: startedAt.toISOString(),
      node: process.version,
      platform: `${platform()} ${osRelease()}`,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
      loadAverageAtStart: loadAtStart.map((l) => round(l, 2)),
      loadAverageAtEnd: loadavg().map((l) => round(l, 2)),
      redisVersion,
      protocol: BENCH_PROTOCOL === undefined ? 'RESP3 (ioredis 6 default)' : `RESP${BENCH_PROTOCOL} (BENCH_RESP)`,
      versions: stackVersions(['ioredis', '@nestjs/core', '@sesamecare-oss/redlock', 'redis-semaphore', 'typescript']),
      redisSource: redis.source,
      quick: QUICK,
    };
    const report = buildReport([...results.values()], machine);
    report.markdown += readWriteMarkdown(readWrite);
    process.stdout.write(`${report.markdown}\n`);
    mkdirSync(RESULTS_DIR, { recursive: true });
    writeFileSync(join(RESULTS_DIR, `${RESULTS_NAME}.md`), `${report.markdown}\n`);
    writeFileSync(
      join(RESULTS_DIR, `${RESULTS_NAME}.json`),
      JSON.stringify({ machine, plan: PLAN, targets: report.targets, contenders: [...results.values()], readWrite }, withoutSamples, 2) +
        '\n',
    );
    progress(
      `wrote ${join('bench', 'results', `${RESULTS_NAME}.md`)} and .json; load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await Promise.allSettled(contenders.map((c) => c.close()));
    await deleteRunKeys(admin, runId).catch(() => undefined);
    admin.disconnect();
    await redis.stop();
  }
}

/**
 * Per-operation CPU from a scenario's summed usage. `clientMicros` is the scenario's own figure
 * (process.cpuUsage around the timed loop); `profile` (MONITOR, untimed) tells which commands ran
 * inside scripts, whose time commandstats would otherwise count twice.
 */
function cpuPerOperation(usage: Usage, clientMicros: number, profile: CommandProfile, operations: number): CpuPerOperation {
  const n = Math.max(1, operations);
  return {
    clientMicros,
    redisMicros: usage.redisCpuMicros / n,
    redisCommandMicros: commandMicros(usage, clientShareOf(profile)) / n,
    redisCommands: totalCalls(usage) / n,
  };
}

/** JSON replacer: raw latency samples stay out of the results file (their summaries are in it). */
function withoutSamples(key: string, value: unknown): unknown {
  return key === 'handoffSamples' || key === 'waitSamples' ? undefined : value;
}

/** Commands counted by MONITOR per operation, in all and by command name (most frequent first). */
function perOperation(counts: Map<string, number>, operations: number): { total: number; byCommand: Record<string, number> } {
  let total = 0;
  const byCommand: Record<string, number> = {};
  for (const [name, n] of [...counts].sort((x, y) => y[1] - x[1])) {
    total += n;
    byCommand[name] = round(n / operations, 2);
  }
  return { total: round(total / operations, 2), byCommand };
}

/** Deletes what this run left behind (fencing counters have no TTL), by the run id in every key. */
async function deleteRunKeys(admin: Redis, runId: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `*${runId}*`, 'COUNT', 1000);
    if (keys.length > 0) await admin.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}

// ---------------------------------------------------------------- report

type Better = 'higher' | 'lower' | 'none';

interface Metric {
  readonly scenario: string;
  readonly label: string;
  readonly better: Better;
  value(r: ContenderResult): number | undefined;
  format(v: number, r: ContenderResult): string;
}

const int = (v: number) => Math.round(v).toLocaleString('en-US');
const ms2 = (v: number) => v.toFixed(2);
const us0 = (v: number) => Math.round(v * 1000).toLocaleString('en-US');
const round = (v: number, digits: number) => Math.round(v * 10 ** digits) / 10 ** digits;
/** µs with one decimal below 100 (command times of a few µs), whole above. */
const us = (v: number) => (v < 100 ? v.toFixed(1) : int(v));

/** The CPU rows of one scenario: this process, the Redis server, command execution, and both sides together. */
function cpuMetrics(scenario: string, per: string, pick: (r: ContenderResult) => CpuPerOperation | undefined): Metric[] {
  return [
    { scenario, label: `bench process CPU per ${per} (µs)`, better: 'lower', value: (r) => pick(r)?.clientMicros, format: us },
    { scenario, label: `Redis CPU per ${per} (µs, INFO cpu)`, better: 'lower', value: (r) => pick(r)?.redisMicros, format: us },
    { scenario, label: `Redis command time per ${per} (µs)`, better: 'lower', value: (r) => pick(r)?.redisCommandMicros, format: us },
    {
      scenario,
      label: `bench + Redis CPU per ${per} (µs)`,
      better: 'lower',
      value: (r) => {
        const cpu = pick(r);
        return cpu ? cpu.clientMicros + cpu.redisMicros : undefined;
      },
      format: us,
    },
  ];
}

const METRICS: Metric[] = [
  { scenario: '(a) sequential', label: 'acquire+release pairs/s', better: 'higher', value: (r) => r.sequential?.opsPerSec, format: int },
  { scenario: '(a) sequential', label: 'pair latency p50 (µs)', better: 'lower', value: (r) => r.sequential?.latencyMs.p50, format: us0 },
  { scenario: '(a) sequential', label: 'pair latency p99 (µs)', better: 'lower', value: (r) => r.sequential?.latencyMs.p99, format: us0 },
  ...cpuMetrics('(a) sequential', 'pair', (r) => r.sequential?.cpu),
  {
    scenario: '(b) 64 keys parallel',
    label: 'acquire+release pairs/s',
    better: 'higher',
    value: (r) => r.parallel?.opsPerSec,
    format: int,
  },
  ...cpuMetrics('(b) 64 keys parallel', 'pair', (r) => r.parallel?.cpu),
  { scenario: '(c) hot key', label: 'acquisitions/s', better: 'higher', value: (r) => r.hotKey?.acquisitionsPerSec, format: int },
  {
    scenario: '(c) hot key',
    label: 'lock held, % of the time',
    better: 'higher',
    value: (r) => (r.hotKey ? (r.hotKey.heldMs / r.hotKey.windowMs) * 100 : undefined),
    format: (v) => v.toFixed(0),
  },
  { scenario: '(c) hot key', label: 'handoff p50 (ms)', better: 'lower', value: (r) => r.hotKey?.handoff.p50, format: ms2 },
  { scenario: '(c) hot key', label: 'handoff p99 (ms)', better: 'lower', value: (r) => r.hotKey?.handoff.p99, format: ms2 },
  { scenario: '(c) hot key', label: 'wait p50 (ms)', better: 'lower', value: (r) => r.hotKey?.wait.p50, format: ms2 },
  { scenario: '(c) hot key', label: 'wait p99 (ms)', better: 'lower', value: (r) => r.hotKey?.wait.p99, format: ms2 },
  { scenario: '(c) hot key', label: 'wait max (ms)', better: 'lower', value: (r) => r.hotKey?.wait.max, format: ms2 },
  ...cpuMetrics('(c) hot key', 'acquisition', (r) => r.hotKey?.cpu),
  {
    scenario: '(c) hot key',
    label: 'acquisitions per worker min / max',
    better: 'none',
    value: (r) => (r.hotKey ? Math.min(...r.hotKey.perWorker) : undefined),
    format: (_, r) => `${Math.min(...r.hotKey!.perWorker)} / ${Math.max(...r.hotKey!.perWorker)}`,
  },
  { scenario: '(c) hot key', label: 'overlapping holders (must be 0)', better: 'none', value: (r) => r.hotKey?.overlaps, format: int },
  {
    scenario: '(c) hot key',
    label: 'failed acquires / releases',
    better: 'none',
    value: (r) => r.hotKey?.failedAcquires,
    format: (_, r) => `${r.hotKey!.failedAcquires} / ${r.hotKey!.failedReleases}`,
  },
  {
    scenario: 'profile',
    label: 'Redis round trips per (a) pair',
    better: 'lower',
    value: (r) => r.roundTrips?.perPair,
    format: (v) => v.toFixed(2),
  },
  {
    scenario: 'profile',
    label: 'Redis round trips per (c) acquisition',
    better: 'lower',
    value: (r) => r.roundTrips?.perHotAcquisition,
    format: (v) => v.toFixed(2),
  },
  {
    scenario: 'profile',
    label: "Redis commands run per (a) pair (scripts' too)",
    better: 'lower',
    value: (r) => r.sequential?.cpu?.redisCommands,
    format: (v) => v.toFixed(2),
  },
  {
    scenario: 'profile',
    label: 'Redis commands run per (c) acquisition',
    better: 'lower',
    value: (r) => r.hotKey?.cpu?.redisCommands,
    format: (v) => v.toFixed(2),
  },
];

/** > 1 means ours is better: ours ÷ peer when higher is better, peer ÷ ours when lower is better. */
function advantage(metric: Metric, ours: number, peer: number): number | undefined {
  if (metric.better === 'higher') return peer > 0 ? ours / peer : undefined;
  if (metric.better === 'lower') return ours > 0 ? peer / ours : undefined;
  return undefined;
}

interface TargetResult {
  readonly target: string;
  readonly measured: string;
  readonly met: boolean;
}

function buildReport(all: ContenderResult[], machine: Record<string, unknown>): { markdown: string; targets: TargetResult[] } {
  const byName = new Map(all.map((r) => [r.name, r]));
  const ours = byName.get(OURS)!;
  const columns = all.map((r) => r.name);
  const headers = ['scenario', 'metric', ...columns, ...PEERS.map((p) => `ours vs ${p}`)];
  const rows = METRICS.map((m) => {
    const cells = all.map((r) => {
      const v = m.value(r);
      return v === undefined || Number.isNaN(v) ? '—' : m.format(v, r);
    });
    const ratios = PEERS.map((p) => {
      const o = m.value(ours);
      const v = m.value(byName.get(p)!);
      const a = o === undefined || v === undefined ? undefined : advantage(m, o, v);
      return a === undefined || !Number.isFinite(a) ? '' : `${a.toFixed(2)}×`;
    });
    return [m.scenario, m.label, ...cells, ...ratios];
  });
  const table = markdownTable(headers, rows, ['l', 'l', ...columns.map(() => 'r' as const), ...PEERS.map(() => 'r' as const)]);

  const targets = evaluateTargets(byName);
  const targetTable = markdownTable(
    ['target', 'measured', 'result'],
    targets.map((t) => [t.target, t.measured, t.met ? 'met' : 'MISSED']),
  );

  const settings = all.map((r) => `- **${r.name}**: ${r.settings}`).join('\n');
  const roundTrips = all
    .map((r) => {
      const rt = r.roundTrips;
      if (!rt) return `- **${r.name}**: —`;
      const fmt = (o: Record<string, number>) =>
        Object.entries(o)
          .map(([k, v]) => `${k} ${v === 0 ? '<0.01' : v}`)
          .join(', ');
      return `- **${r.name}**: (a) pair: ${fmt(rt.perPairByCommand)}; (c) acquisition: ${fmt(rt.perHotAcquisitionByCommand)}`;
    })
    .join('\n');
  const spread = all
    .map(
      (r) =>
        `- **${r.name}**: (a) ${r.sequential?.roundsOpsPerSec.map(int).join(' / ')}; (b) ` +
        `${r.parallel?.roundsOpsPerSec.map(int).join(' / ')}`,
    )
    .join('\n');
  const firstErrors = all.filter((r) => r.hotKey?.firstError).map((r) => `- **${r.name}**: ${r.hotKey!.firstError}`);

  const md = [
    `# Lock benchmark${QUICK ? ' (QUICK smoke run: not comparable)' : ''}`,
    '',
    `\`npm run bench:locks\`, ${machine.date}. All contenders run in one process, one after another, on the same Redis.`,
    '',
    table,
    '',
    '"ours vs X": ratio > 1 means ours is better (ours ÷ X for throughput, X ÷ ours for latencies, CPU and round trips).',
    '"ours" = default lock with a fixed lease (like every peer). "ours (watchdog)" = no `leaseTime` ' +
      '(the library\'s default mode); "ours (fair)" = `fair: true`. Those two are shown for information: ' +
      'ratios and targets use "ours".',
    '',
    '## Targets',
    '',
    targetTable,
    '',
    '## Scenarios',
    '',
    `- (a) one caller, one key: acquire + release back to back; ${PLAN.sequential.warmup} warm-up pairs, ` +
      `then ${PLAN.sequential.rounds} rounds × ${PLAN.sequential.iterations} timed pairs (contender order ` +
      `rotated each round).`,
    `- (b) ${PLAN.parallel.width} callers at once, each on its own key, acquire + release in a ` +
      `loop; ${PLAN.parallel.warmupMs} ms warm-up, then ${PLAN.parallel.rounds} rounds × ${PLAN.parallel.durationMs} ms.`,
    `- (c) ${PLAN.hotKey.workers} workers on one key, each: acquire (waiting up to 10 s), hold ${PLAN.hotKey.holdMs} ` +
      `ms, release, think ${PLAN.hotKey.thinkMs} ms (setTimeout, so ≥ 1 ms each); ${PLAN.hotKey.warmupMs} ` +
      `ms warm-up, then ${PLAN.hotKey.rounds} rounds × ${PLAN.hotKey.durationMs} ms per contender (order ` +
      `rotated), samples pooled. ` +
      ('acquisitions/s counts acquires completed inside the window; "lock held" = time from acquire() resolved ' +
        'to release() resolved, summed, over the window (100 % is the ceiling: hold + release round trip, ' +
        "with zero handoff gap); handoff = previous holder's release() resolving → next acquire() resolving; " +
        'wait = acquire() called → resolved. ') +
      ('A handoff whose acquire resolved in the same tick as, or just before, the release it followed (both ' +
        'replies in one read) counts as 0; share of those: ') +
      all
        .map(
          (r) => `${r.name} ${r.hotKey ? ((r.hotKey.sameTickHandoffs / Math.max(1, r.hotKey.acquisitions - 1)) * 100).toFixed(0) : '—'} %`,
        )
        .join(', ') +
      ('. Overlaps are counted between acquire() resolving and release() being called (inside the real ' +
        'hold), so any overlap is a real violation.'),
    '- CPU per operation, over the same timed stretches as the wall-clock figures (every round summed): ' +
      '"bench process CPU" = user + system CPU time of this process (process.cpuUsage), the client-side ' +
      'cost of a contender; ' +
      ('"Redis CPU" = user + system CPU of the redis-server process (INFO cpu), i.e. command execution ' +
        'plus reading requests, writing replies and pub/sub delivery; ') +
      ('"Redis command time" = execution time alone (INFO commandstats usec), each command once (a script\'s ' +
        'time already holds the commands it runs; which commands ran inside scripts is taken from the MONITOR profile below); ') +
      ('"bench + Redis" = both, what one operation costs the machine. CPU figures move far less than wall-clock ' +
        'ones when other jobs share the CPUs: compare these across runs. ') +
      ('In (c) they are divided by every acquisition of the rounds (wind-down included) and contain the ' +
        "waiting strategy (polling or pub/sub) and the workers' hold/think timers."),
    '- "Redis commands run": calls counted by INFO commandstats over the timed stretches, commands run ' +
      "inside scripts included: the server's work in commands, next to the client round trips of the profile.",
    `- profile: Redis commands sent by clients (MONITOR, Lua-internal calls excluded) per (a) pair ` +
      `over ${PLAN.profile.pairs} pairs and per (c) acquisition over a ${PLAN.profile.hotKeyMs} ms hot-key run; untimed.`,
    '',
    '## Contender settings',
    '',
    settings,
    '',
    '## Round trips by command',
    '',
    roundTrips,
    '',
    '## Throughput per round (ops/s)',
    '',
    spread,
    ...(firstErrors.length ? ['', '## First error seen in (c)', '', ...firstErrors] : []),
    '',
    '## Machine',
    '',
    `- node ${machine.node}, ${machine.platform}, ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.memoryGiB} GiB`,
    `- Redis ${machine.redisVersion} ` +
      '(' +
      (machine.redisSource === 'redis-server'
        ? 'private redis-server on loopback, started by the bench'
        : 'REDIS_URL: its CPU figures include any other traffic') +
      '), ' +
      `clients on ${machine.protocol}`,
    '- ' +
      describeVersions(Object.fromEntries(Object.entries(machine.versions as Record<string, string>).filter(([name]) => name !== 'node'))),
    `- load average (1/5/15 min) at start ${(machine.loadAverageAtStart as number[]).join(' / ')}, at ` +
      `end ${(machine.loadAverageAtEnd as number[]).join(' / ')}: Redis and the bench share these ${machine.cpus} ` +
      `CPUs with anything else running, so compare ratios within one run rather than absolute numbers across runs`,
  ].join('\n');
  return { markdown: md, targets };
}

function evaluateTargets(byName: Map<string, ContenderResult>): TargetResult[] {
  const ours = byName.get(OURS)!;
  const raw = byName.get('raw')!;
  const peers = PEERS.map((p) => byName.get(p)!);
  const out: TargetResult[] = [];

  const withinRaw = (
    label: string,
    o?: { opsPerSec: number; roundsOpsPerSec: number[] },
    r?: { opsPerSec: number; roundsOpsPerSec: number[] },
  ) => {
    if (!o || !r) return;
    const ratio = o.opsPerSec / r.opsPerSec;
    // Rounds are seconds apart, so a per-round ratio shares the background load of its round.
    const perRound = o.roundsOpsPerSec.map((v, i) => v / r.roundsOpsPerSec[i]).sort((x, y) => x - y);
    const median = perRound[Math.floor(perRound.length / 2)];
    out.push({
      target: `${label}: ours ≥ 90 % of raw`,
      measured:
        `${int(o.opsPerSec)} vs ${int(r.opsPerSec)} ops/s = ${(ratio * 100).toFixed(1)} % of raw ` +
        `(per round ${perRound.map((x) => (x * 100).toFixed(0)).join(' / ')} %, median ${(median * 100).toFixed(0)} %)`,
      met: ratio >= 0.9,
    });
  };
  withinRaw('(a) pairs/s', ours.sequential, raw.sequential);
  withinRaw('(b) pairs/s', ours.parallel, raw.parallel);

  // The uncontended cycle against redis-semaphore (the plainest peer): throughput per round, CPU over the scenario.
  const semaphore = byName.get('redis-semaphore');
  const o = ours.parallel;
  const m = semaphore?.parallel;
  if (o && m) {
    const perRound = o.roundsOpsPerSec.map((v, i) => v / m.roundsOpsPerSec[i]).sort((x, y) => x - y);
    const median = perRound[Math.floor(perRound.length / 2)];
    out.push({
      target: '(b) pairs/s: ours ≥ 1.0 × redis-semaphore (median of per-round ratios)',
      measured:
        `${int(o.opsPerSec)} vs ${int(m.opsPerSec)} ops/s; per round ${perRound.map((x) => x.toFixed(2)).join(' / ')}×, ` +
        `median ${median.toFixed(2)}×`,
      met: median >= 1,
    });
    if (o.cpu && m.cpu) {
      const client = o.cpu.clientMicros / m.cpu.clientMicros;
      const server = o.cpu.redisMicros / m.cpu.redisMicros;
      out.push({
        target: '(b) client CPU per pair: ours ≤ 1.1 × redis-semaphore',
        measured: `${o.cpu.clientMicros.toFixed(1)} vs ${m.cpu.clientMicros.toFixed(1)} µs = ${client.toFixed(2)}×`,
        met: client <= 1.1,
      });
      out.push({
        target: '(b) Redis CPU per pair: ours ≤ 1.2 × redis-semaphore',
        measured: `${o.cpu.redisMicros.toFixed(1)} vs ${m.cpu.redisMicros.toFixed(1)} µs = ${server.toFixed(2)}×`,
        met: server <= 1.2,
      });
    }
  }

  const bestThroughput = peers.reduce((b, p) => ((p.hotKey?.acquisitionsPerSec ?? 0) > (b.hotKey?.acquisitionsPerSec ?? 0) ? p : b));
  const bestWait = peers.reduce((b, p) => ((p.hotKey?.wait.p99 ?? Infinity) < (b.hotKey?.wait.p99 ?? Infinity) ? p : b));
  for (const name of [OURS, ...INFO_TARGETS]) {
    const mine = byName.get(name)?.hotKey;
    if (!mine) continue;
    const who = name === OURS ? '' : ` [${name}, for information]`;
    if (bestThroughput.hotKey) {
      const ratio = mine.acquisitionsPerSec / bestThroughput.hotKey.acquisitionsPerSec;
      // Holds cannot overlap, so no lock exceeds one acquisition per mean hold (the 1 ms timer plus
      // the release round trip): the ratio this run allows at most, whatever the handoff.
      const ceiling = mine.acquisitionsPerSec / (mine.heldMs / mine.windowMs);
      out.push({
        target: `(c) acquisitions/s: ours ≥ 2 × best peer${who}`,
        measured:
          `${int(mine.acquisitionsPerSec)} vs ${int(bestThroughput.hotKey.acquisitionsPerSec)} (${bestThroughput.name}` +
          `) = ${ratio.toFixed(2)}×; ` +
          (`ceiling (a lock never free: 1 s ÷ mean ` +
            `hold) ${int(ceiling)}/s = ${(ceiling / bestThroughput.hotKey.acquisitionsPerSec).toFixed(2)}× the best peer`),
        met: ratio >= 2,
      });
    }
    if (bestWait.hotKey) {
      const ratio = bestWait.hotKey.wait.p99 / mine.wait.p99;
      out.push({
        target: `(c) wait p99: ours ≤ 1/5 of best peer${who}`,
        measured: `${ms2(mine.wait.p99)} ms vs ${ms2(bestWait.hotKey.wait.p99)} ms (${bestWait.name}) = 1/${ratio.toFixed(2)}`,
        met: ratio >= 5,
      });
    }
    out.push({
      target: `(c) mutual exclusion: 0 overlapping holders${who}`,
      measured: `${mine.overlaps} overlaps`,
      met: mine.overlaps === 0,
    });
  }
  return out;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});

/** Section (d) of the report: the read/write lock against the plain lock on the same read-mostly load. */
function readWriteMarkdown(rows: readonly ReadWriteResult[]): string {
  const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 2 : 0) : '–');
  const table = markdownTable(
    [
      '(d) one key, 16 workers, 20 % writes',
      'reads/s',
      'writes/s',
      'read wait p99 (ms)',
      'write wait p50 (ms)',
      'write wait p99 (ms)',
      'write wait max (ms)',
      'most readers at once',
      'violations (must be 0)',
    ],
    rows.map((r) => [
      r.variant,
      fmt(r.readsPerSec),
      fmt(r.writesPerSec),
      fmt(r.readWaitMs.p99),
      fmt(r.writeWaitMs.p50),
      fmt(r.writeWaitMs.p99),
      fmt(r.writeWaitMs.max),
      String(r.maxConcurrentReaders),
      String(r.violations),
    ]),
  );
  return (
    `\n## (d) Read/write lock under contention\n\nOurs only (redlock and redis-semaphore have no read/write ` +
    `lock): the same read-mostly load (hold 1 ms, think 2 ms) on \`locks.readWrite(key)\` and on the ` +
    `plain lock taking every operation exclusively. A waiting writer holds back new readers, so writers ` +
    `are not starved.\n\n${table}\n`
  );
}
