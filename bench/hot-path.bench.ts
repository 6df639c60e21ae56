/**
 * Hot-path benchmark (issue 17): the uncontended lock cycle's CPU on both sides, ours against the
 * raw SET NX + compare-and-delete floor and the peers, in one run. Only scenario (b) of
 * locks.bench.ts (64 callers in parallel, each on a key of its own, fixed lease), in many short
 * rounds with the contenders' order rotated, so a median per contender is cheap to get.
 *
 *   node --import ./tools/typescript-loader/register.js bench/hot-path.bench.ts
 *   HOT_ROUNDS=12 HOT_ROUND_MS=400 HOT_ONLY=ours,raw …     (defaults: 10 rounds of 350 ms, everyone)
 *   HOT_EXTRA=1 …        (also `ours (tracing off)` and `ours' scripts alone`, see createBareScriptsContender)
 *   HOT_CPU_PROFILE=1 …   (with node --cpu-prof: only `ours` runs, for a clean profile)
 *
 * Prints (and writes bench/results/hot-path-latest.md) the median per contender of: client CPU per
 * cycle (process.cpuUsage), Redis CPU per cycle (INFO cpu), Redis commands per cycle (INFO
 * commandstats, scripts' own commands included) and cycles/s (wall clock: noisy on a shared box).
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { clientShareOf, countRoundTrips, provideBenchRedis, redisServerVersion } from './support/bench-redis.js';
import {
  createBareScriptsContender,
  createOurContenders,
  createRawContender,
  createRedlockContender,
  createSemaphoreContender,
  type LockContender,
} from './support/lock-contenders.js';
import { runParallel, runSequential } from './support/lock-scenarios.js';
import { markdownTable } from './support/markdown-table.js';
import { describeVersions, stackVersions } from './support/stack-versions.js';
import { commandMicros, totalCalls, UsageMeter, type Usage } from './support/usage-meter.js';

const ROUNDS = Number(process.env.HOT_ROUNDS ?? 10);
const ROUND_MS = Number(process.env.HOT_ROUND_MS ?? 350);
const WIDTH = 64;
const PROFILE = process.env.HOT_CPU_PROFILE === '1';
/** Also measure `ours (tracing off)` and `ours' scripts alone` (what the library adds on top of its Redis protocol). */
const EXTRA = process.env.HOT_EXTRA === '1';
const ONLY = PROFILE ? ['ours'] : process.env.HOT_ONLY?.split(',').map((s) => s.trim());

interface Round {
  readonly clientMicros: number;
  readonly redisMicros: number;
  readonly commands: number;
  readonly opsPerSec: number;
  readonly pairs: number;
  readonly usage: Usage;
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function main(): Promise<void> {
  const redis = await provideBenchRedis();
  const admin = new Redis(redis.url);
  const meter = new UsageMeter(admin);
  const runId = randomBytes(3).toString('hex');
  const all: LockContender[] = [
    ...(await createOurContenders(redis.url, 'hot')),
    await createRawContender(redis.url, 'hot:raw'),
    await createRedlockContender(redis.url, 'hot:redlock'),
    await createSemaphoreContender(redis.url, 'hot:sem'),
    // The peers on the transport this library builds for itself (ioredis' auto-pipelining).
    await createRawContender(redis.url, 'hot:raw-ap', 'pipelined'),
    await createSemaphoreContender(redis.url, 'hot:sem-ap', 'pipelined'),
  ];
  if (EXTRA) {
    const [untraced] = await createOurContenders(redis.url, 'hot-untraced', { tracing: false });
    all.push({ ...untraced, name: 'ours (tracing off)' }, await createBareScriptsContender(redis.url, 'hot-bare'));
  }
  const contenders = all.filter((c) => !ONLY || ONLY.includes(c.name));
  const rounds = new Map<string, Round[]>(contenders.map((c) => [c.name, []]));
  /** Redis command execution time per cycle, each command once (see usage-meter.ts), per round. */
  const commandTime = new Map<string, number[]>();
  const loadAtStart = loadavg();
  const redisVersion = await redisServerVersion(admin);
  try {
    for (const c of contenders) await runParallel(c, `${runId}:${c.name}`, { width: WIDTH, durationMs: 300 });
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < contenders.length; i++) {
        const c = contenders[(i + round) % contenders.length];
        const { result, usage } = await meter.measure(() => runParallel(c, `${runId}:${c.name}`, { width: WIDTH, durationMs: ROUND_MS }));
        rounds.get(c.name)!.push({
          clientMicros: result.cpuMicros / result.pairs,
          redisMicros: usage.redisCpuMicros / result.pairs,
          commands: totalCalls(usage) / result.pairs,
          opsPerSec: (result.pairs / result.elapsedMs) * 1000,
          pairs: result.pairs,
          usage,
        });
      }
      process.stderr.write(`[hot-path] round ${round + 1}/${ROUNDS}\n`);
    }
    // Which commands each contender sends itself (the rest ran inside its scripts), for command time counted once.
    for (const c of contenders) {
      const profile = await countRoundTrips(redis.url, () =>
        runSequential(c, `${runId}:${c.name}:profile`, { warmup: 0, iterations: 200 }).then(() => undefined),
      );
      const share = clientShareOf(profile);
      commandTime.set(
        c.name,
        rounds.get(c.name)!.map((r) => commandMicros(r.usage, share) / r.pairs),
      );
    }
  } finally {
    for (const c of all) await c.close().catch(() => undefined);
    admin.disconnect();
    await redis.stop();
  }
  const loadAtEnd = loadavg();
  const rawRounds = rounds.get('raw');
  const rawTimes = commandTime.get('raw');
  /**
   * The median over rounds of this contender's figure ÷ raw's in the same round: the two ran seconds
   * apart, under the same background load, so this ratio moves far less than either figure does.
   */
  const ratio = (values: readonly number[], base: readonly number[] | undefined) =>
    base ? median(values.map((v, i) => v / base[i])) : Number.NaN;
  const vsRaw = (values: readonly number[], base: readonly number[] | undefined) => (base ? `${ratio(values, base).toFixed(2)}×` : '');
  const semRounds = rounds.get('redis-semaphore');
  const summary = contenders.map((c) => {
    const r = rounds.get(c.name)!;
    const times = commandTime.get(c.name) ?? r.map(() => Number.NaN);
    return {
      name: c.name,
      client: median(r.map((x) => x.clientMicros)),
      clientVsRaw: vsRaw(
        r.map((x) => x.clientMicros),
        rawRounds?.map((x) => x.clientMicros),
      ),
      redis: median(r.map((x) => x.redisMicros)),
      redisVsRaw: vsRaw(
        r.map((x) => x.redisMicros),
        rawRounds?.map((x) => x.redisMicros),
      ),
      commandMicros: median(times),
      commandVsRaw: vsRaw(times, rawTimes),
      commands: median(r.map((x) => x.commands)),
      ops: median(r.map((x) => x.opsPerSec)),
      opsVsRaw: vsRaw(
        r.map((x) => x.opsPerSec),
        rawRounds?.map((x) => x.opsPerSec),
      ),
      clientVsSem: vsRaw(
        r.map((x) => x.clientMicros),
        semRounds?.map((x) => x.clientMicros),
      ),
      redisVsSem: vsRaw(
        r.map((x) => x.redisMicros),
        semRounds?.map((x) => x.redisMicros),
      ),
      opsVsSem: vsRaw(
        r.map((x) => x.opsPerSec),
        semRounds?.map((x) => x.opsPerSec),
      ),
    };
  });
  /** Issue 27's targets, each a median of per-round ratios (contenders of one round ran seconds apart). */
  const ours = rounds.get('ours');
  const watched = rounds.get('ours (watchdog)');
  const targetRows: string[][] = [];
  const target = (what: string, value: number, goal: string, met: boolean) =>
    targetRows.push([what, Number.isNaN(value) ? 'n/a' : `${value.toFixed(2)}×`, goal, Number.isNaN(value) ? '' : met ? 'met' : 'not met']);
  if (ours && semRounds) {
    const cycles = ratio(
      ours.map((x) => x.opsPerSec),
      semRounds.map((x) => x.opsPerSec),
    );
    const client = ratio(
      ours.map((x) => x.clientMicros),
      semRounds.map((x) => x.clientMicros),
    );
    const server = ratio(
      ours.map((x) => x.redisMicros),
      semRounds.map((x) => x.redisMicros),
    );
    target('ours vs redis-semaphore: cycles/s', cycles, '≥ 1.00×', cycles >= 1);
    target('ours vs redis-semaphore: client CPU per cycle', client, '≤ 1.10×', client <= 1.1);
    target('ours vs redis-semaphore: Redis CPU per cycle', server, '≤ 1.20×', server <= 1.2);
  }
  if (ours && watched) {
    const cycles = ratio(
      watched.map((x) => x.opsPerSec),
      ours.map((x) => x.opsPerSec),
    );
    target('ours (watchdog) vs ours (fixed lease): cycles/s', cycles, '≥ 0.90×', cycles >= 0.9);
  }
  const table = markdownTable(
    [
      'contender',
      'client CPU µs/cycle',
      'vs raw',
      'Redis CPU µs/cycle',
      'vs raw',
      'Redis command time µs/cycle',
      'vs raw',
      'Redis commands/cycle',
      'cycles/s (noisy)',
      'vs raw',
      'client CPU vs redis-semaphore',
      'Redis CPU vs redis-semaphore',
      'cycles/s vs redis-semaphore',
    ],
    summary.map((s) => [
      s.name,
      s.client.toFixed(1),
      s.clientVsRaw,
      s.redis.toFixed(1),
      s.redisVsRaw,
      s.commandMicros.toFixed(2),
      s.commandVsRaw,
      s.commands.toFixed(2),
      Math.round(s.ops).toLocaleString('en-US'),
      s.opsVsRaw,
      s.clientVsSem,
      s.redisVsSem,
      s.opsVsSem,
    ]),
    ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
  );
  const targets = markdownTable(['target (issue 27)', 'measured', 'goal', ''], targetRows, ['l', 'r', 'l', 'l']);
  const versions = describeVersions(stackVersions(['ioredis', 'redis-semaphore', '@sesamecare-oss/redlock']));
  const markdown = [
    '# Lock hot path: CPU per uncontended cycle',
    '',
    `bench/hot-path.bench.ts, ${new Date().toISOString()}: ${WIDTH} callers in parallel on distinct keys, fixed lease, ` +
      (`${ROUNDS} rounds × ${ROUND_MS} ms per contender (order rotated), medians of the rounds; "vs raw" ` +
        `is the median of the per-round ratios to raw. `) +
      'Client CPU: this process (process.cpuUsage); Redis CPU: the redis-server process (INFO cpu: execution, I/O, ' +
      'event loop, which grows per operation when fewer operations share a wake-up); Redis command time: execution ' +
      'alone (INFO commandstats, each command once: a script with what it ran); cycles/s is wall clock, noisy on a shared machine.',
    '',
    table,
    '',
    targets,
    '',
    '"(auto-pipelined)": the same peer on a client with ioredis\' `enableAutoPipelining` (a turn\'s ' +
      'commands leave as one write, one batch ' +
      "in flight at a time); the peers' own rows use the client their docs show. This library coalesces the writes of its own connection " +
      ('in one write per 16 commands of a turn, without that one-batch limit (lib/core/redis/coalesce-writes.ts); ' +
        '"ours\' scripts alone" runs on the same transport.'),
    '',
    `Redis ${redisVersion}; ${versions}; load ${loadAtStart.map((l) => l.toFixed(2)).join(' ')} → ` +
      `${loadAtEnd.map((l) => l.toFixed(2)).join(' ')}`,
    '',
  ].join('\n');
  process.stdout.write(`${markdown}\n`);
  if (!PROFILE && !ONLY) {
    mkdirSync(join(import.meta.dirname, 'results'), { recursive: true });
    writeFileSync(join(import.meta.dirname, 'results', 'hot-path-latest.md'), markdown);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
