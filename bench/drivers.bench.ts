/**
 * Drivers benchmark (issue 38): this library on each Redis driver it speaks through, side by side in
 * one run on one private Redis, each through the public option
 * `RedisLockModule.forRoot({ redis: { driver, url } })` in a Nest application context:
 *
 *   npm run bench:drivers              (REDIS_URL=redis://… to use a server of yours instead of a private one)
 *   npm run bench:drivers -- --quick   (a smoke run, also BENCH_QUICK=1: smaller, one round; numbers not comparable)
 *
 * (1) the uncontended lock cycle: one caller, acquire + release of a fresh key, back to back;
 * (2) the contended hot key: 32 callers on one key, each acquire → one microtask → release, a fixed
 *     number of acquisitions in all;
 * (3) the delayed-job burst: 5,000 jobs due now scheduled, then consumed with concurrency 50 until
 *     every handler ran (end to end, from the first schedule call to the last handler).
 * (1) and (2) also run redlock-universal 0.8.5 on node-redis, GLIDE and ioredis, for our ratio
 * against it on the same driver. Every scenario runs in rounds with the contenders' order rotated;
 * a figure is the median of the rounds, a ratio the median of per-round ratios (two contenders of
 * one round ran seconds apart, under the same background load), CPU per operation the total over
 * all rounds. Client CPU: this process (process.cpuUsage); Redis CPU: the redis-server process (INFO cpu).
 *
 * A driver the module (or redlock-universal) cannot run here is reported as "not available: <error>"
 * and the run goes on. Writes bench/results/drivers.md and drivers.json (not on a quick run).
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { provideMeteredRedis } from './support/bench-redis.js';
import { environmentLine } from './support/bench-report.js';
import {
  BENCH_DRIVERS,
  DRIVER_PACKAGE,
  isUnavailable,
  openOurDriver,
  openPeer,
  PEER_DRIVERS,
  PEER_RETRY,
  type BenchDriver,
  type OurDriverApp,
} from './support/driver-contenders.js';
import { runFreshKeyCycles, runHotKeyCount, runJobBurst, type Measured } from './support/driver-scenarios.js';
import type { LockContender } from './support/lock-contenders.js';
import { markdownTable } from './support/markdown-table.js';
import { addUsage, totalCalls } from './support/usage-meter.js';

const QUICK = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const PLAN = {
  rounds: QUICK ? 1 : 5,
  cycle: { cycles: QUICK ? 200 : 2000, warmup: 100 },
  hotKey: { callers: 32, total: QUICK ? 300 : 4000, warmup: 200 },
  burst: { jobs: QUICK ? 500 : 5000, concurrency: 50, rounds: QUICK ? 1 : 3, timeoutMs: 120_000 },
};
const RESULTS_DIR = join(import.meta.dirname, 'results');

/** A lock contender of the run: ours or the peer, on one driver. */
interface LockEntry {
  readonly driver: BenchDriver;
  readonly library: 'ours' | 'redlock-universal';
  readonly contender: LockContender;
}

interface CycleRound extends Measured {
  readonly p50: number;
  readonly p99: number;
}

interface HotRound extends Measured {
  readonly p50: number;
  readonly p99: number;
  readonly overlaps: number;
  readonly perCaller: { readonly min: number; readonly max: number };
  readonly failures: number;
  readonly firstError?: string;
}

interface BurstRound extends Measured {
  readonly enqueueMs: number;
  readonly firstMs: number;
}

const median = (values: readonly number[]) => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const perSecond = (r: Measured) => (r.ops / r.elapsedMs) * 1000;
/** CPU per operation on both sides and Redis commands per operation (scripts' inner ones included), over all rounds. */
const perOp = (rounds: readonly Measured[]) => {
  const ops = rounds.reduce((n, r) => n + r.ops, 0);
  const usage = addUsage(rounds.map((r) => r.usage));
  return { client: usage.clientCpuMicros / ops, redis: usage.redisCpuMicros / ops, commands: totalCalls(usage) / ops };
};
const roundCount = (n: number) => `${n} round${n === 1 ? '' : 's'}`;
const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
const count = (value: number) => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a');
const times = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : 'n/a');

function progress(message: string): void {
  process.stderr.write(`[bench:drivers] ${message}\n`);
}

/**
 * Each round runs every contender once, the order rotated by one per round. A contender whose run
 * throws is left out of the rest of the run, its error in `failed` (by `label`): one driver's
 * failure never ends the bench.
 */
async function inRotatedRounds<T>(
  items: readonly T[],
  rounds: number,
  failed: Map<string, string>,
  label: (item: T) => string,
  run: (item: T, round: number) => Promise<void>,
): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < items.length; i++) {
      const item = items[(i + round) % items.length];
      if (failed.has(label(item))) continue;
      try {
        await run(item, round);
      } catch (error) {
        failed.set(label(item), String((error as Error)?.message ?? error).split('\n')[0]);
        progress(`${label(item)} failed: ${failed.get(label(item))}`);
      }
    }
  }
}

async function main(): Promise<void> {
  const metered = await provideMeteredRedis();
  const { meter } = metered;
  const url = metered.redis.url;
  await metered.flushIfPrivate();
  const runId = randomBytes(3).toString('hex');
  progress(`Redis ${metered.version} (${metered.redis.source}); ${QUICK ? 'QUICK run' : `${PLAN.rounds} rounds`}`);

  const unavailable: string[] = [];
  const apps: OurDriverApp[] = [];
  const locks: LockEntry[] = [];
  for (const driver of BENCH_DRIVERS) {
    const opened = await openOurDriver(driver, url, `drv-${driver}`);
    if (isUnavailable(opened)) {
      unavailable.push(`ours on ${driver}: not available: ${opened.unavailable}`);
      continue;
    }
    apps.push(opened);
    locks.push({ driver, library: 'ours', contender: opened.lock });
  }
  for (const driver of PEER_DRIVERS) {
    const opened = await openPeer(driver, url, `rlu-${driver}`);
    if (isUnavailable(opened)) {
      unavailable.push(`redlock-universal on ${driver}: not available: ${opened.unavailable}`);
      continue;
    }
    locks.push({ driver, library: 'redlock-universal', contender: opened });
  }
  for (const line of unavailable) progress(line);

  const cycles = new Map<LockEntry, CycleRound[]>(locks.map((l) => [l, []]));
  const hot = new Map<LockEntry, HotRound[]>(locks.map((l) => [l, []]));
  const bursts = new Map<OurDriverApp, BurstRound[]>(apps.map((a) => [a, []]));
  /** Contenders (and bursts) whose run threw, by name: their rows are dropped, the error reported. */
  const failed = new Map<string, string>();
  try {
    const lockName = (l: LockEntry) => l.contender.name;
    // Connections, script caches and JIT warm for every contender before anything is measured.
    await inRotatedRounds(locks, 1, failed, lockName, async (l) => {
      await runFreshKeyCycles(l.contender, `${runId}:warm`, PLAN.cycle.warmup, meter);
      await runHotKeyCount(l.contender, `${runId}:warm-hot`, { callers: PLAN.hotKey.callers, total: PLAN.hotKey.warmup }, meter);
    });
    await inRotatedRounds(locks, PLAN.rounds, failed, lockName, async (l, round) => {
      const r = await runFreshKeyCycles(l.contender, `${runId}:cycle:${round}`, PLAN.cycle.cycles, meter);
      cycles.get(l)!.push({ ...r, p50: r.latency.p50, p99: r.latency.p99 });
    });
    progress('(1) uncontended cycle done');
    await inRotatedRounds(locks, PLAN.rounds, failed, lockName, async (l, round) => {
      const r = await runHotKeyCount(l.contender, `${runId}:hot:${round}`, PLAN.hotKey, meter);
      hot.get(l)!.push({ ...r, p50: r.wait.p50, p99: r.wait.p99 });
    });
    progress('(2) hot key done');
    const burstName = (app: OurDriverApp) => `burst on ${app.driver}`;
    await inRotatedRounds(apps, PLAN.burst.rounds, failed, burstName, async (app, round) => {
      bursts.get(app)!.push(await runJobBurst(app.queue, `burst-${runId}-${round}`, PLAN.burst, meter));
    });
    progress('(3) job burst done');
  } finally {
    for (const l of locks) await l.contender.close().catch(() => undefined);
    for (const app of apps) await app.close().catch(() => undefined);
    await metered.close();
  }

  for (const results of [cycles, hot]) for (const l of [...results.keys()]) if (failed.has(l.contender.name)) results.delete(l);
  for (const app of [...bursts.keys()]) if (failed.has(`burst on ${app.driver}`)) bursts.delete(app);
  for (const [name, error] of failed) unavailable.push(`${name}: failed during the run: ${error}`);

  /** Ours ÷ redlock-universal on the same driver, the median of per-round ratios of `pick`. */
  const ratioToPeer = <R extends Measured>(results: Map<LockEntry, R[]>, driver: BenchDriver, pick: (r: R) => number) => {
    const ours = [...results].find(([l]) => l.driver === driver && l.library === 'ours')?.[1];
    const peer = [...results].find(([l]) => l.driver === driver && l.library === 'redlock-universal')?.[1];
    if (!ours || !peer) return Number.NaN;
    return median(ours.map((r, i) => pick(r) / pick(peer[i])));
  };
  const cpuBoth = (r: Measured) => (r.usage.clientCpuMicros + r.usage.redisCpuMicros) / r.ops;

  const cycleTable = markdownTable(
    ['contender', 'ops/s', 'p50 ms', 'p99 ms', 'client CPU µs/op', 'Redis CPU µs/op', 'Redis commands/op'],
    [...cycles].map(([l, rounds]) => {
      const cpu = perOp(rounds);
      return [
        l.contender.name,
        count(median(rounds.map(perSecond))),
        fixed(median(rounds.map((r) => r.p50)), 3),
        fixed(median(rounds.map((r) => r.p99)), 3),
        fixed(cpu.client, 1),
        fixed(cpu.redis, 1),
        fixed(cpu.commands, 2),
      ];
    }),
    ['l', 'r', 'r', 'r', 'r', 'r', 'r'],
  );
  const hotTable = markdownTable(
    [
      'contender',
      'acquisitions/s',
      'wait p50 ms',
      'wait p99 ms',
      'client CPU µs/op',
      'Redis CPU µs/op',
      'per caller (fewest–most)',
      'overlaps',
      'failures',
    ],
    [...hot].map(([l, rounds]) => {
      const cpu = perOp(rounds);
      return [
        l.contender.name,
        count(median(rounds.map(perSecond))),
        fixed(median(rounds.map((r) => r.p50)), 2),
        fixed(median(rounds.map((r) => r.p99)), 2),
        fixed(cpu.client, 1),
        fixed(cpu.redis, 1),
        `${Math.min(...rounds.map((r) => r.perCaller.min))}–${Math.max(...rounds.map((r) => r.perCaller.max))}`,
        String(rounds.reduce((n, r) => n + r.overlaps, 0)),
        String(rounds.reduce((n, r) => n + r.failures, 0)),
      ];
    }),
    ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
  );
  const errors = [...hot].flatMap(([l, rounds]) => {
    const first = rounds.find((r) => r.firstError)?.firstError;
    return first ? [`- ${l.contender.name}, first failure: ${first}`] : [];
  });
  const peerDrivers = PEER_DRIVERS.filter((d) => Number.isFinite(ratioToPeer(cycles, d, perSecond)));
  const ratioTable = markdownTable(
    ['driver', '(1) ops/s', '(1) client CPU/op', '(1) Redis CPU/op', '(2) acquisitions/s', '(2) wait p99', '(2) client + Redis CPU/op'],
    peerDrivers.map((d) => [
      d,
      times(ratioToPeer(cycles, d, perSecond)),
      times(ratioToPeer(cycles, d, (r) => r.usage.clientCpuMicros / r.ops)),
      times(ratioToPeer(cycles, d, (r) => r.usage.redisCpuMicros / r.ops)),
      times(ratioToPeer(hot, d, perSecond)),
      times(ratioToPeer(hot, d, (r) => r.p99)),
      times(ratioToPeer(hot, d, cpuBoth)),
    ]),
    ['l', 'r', 'r', 'r', 'r', 'r', 'r'],
  );
  const burstTable = markdownTable(
    ['driver', 'jobs/s end to end', 'enqueue ms', 'first handler ms', 'client CPU µs/job', 'Redis CPU µs/job', 'Redis commands/job'],
    [...bursts].map(([app, rounds]) => {
      const cpu = perOp(rounds);
      return [
        app.driver,
        count(median(rounds.map(perSecond))),
        count(median(rounds.map((r) => r.enqueueMs))),
        count(median(rounds.map((r) => r.firstMs))),
        fixed(cpu.client, 1),
        fixed(cpu.redis, 1),
        fixed(cpu.commands, 2),
      ];
    }),
    ['l', 'r', 'r', 'r', 'r', 'r', 'r'],
  );
  const environment = environmentLine(
    metered.version,
    metered.loadAtStart,
    ['@nestjs/core', ...BENCH_DRIVERS.map((d) => DRIVER_PACKAGE[d]), 'redlock-universal'],
    QUICK,
  );
  const markdown = [
    '# Drivers: the module on each Redis client',
    '',
    `bench/drivers.bench.ts, ${new Date().toISOString()}: each driver through \`RedisLockModule.forRoot({ redis: { driver, url } })\` ` +
      `in a Nest application context, one private Redis, ${roundCount(PLAN.rounds)} per lock scenario and ` +
      `${roundCount(PLAN.burst.rounds)} per burst, ` +
      'the order rotated each round; figures are medians of the rounds, CPU per operation is over all rounds (client: this process, ' +
      'process.cpuUsage; Redis: the redis-server process, INFO cpu), Redis commands include those run inside scripts ' +
      '(INFO commandstats). ' +
      'Wall-clock figures are noisy on a shared 2-core machine; CPU per operation and same-round ratios much less.',
    '',
    `## (1) Uncontended lock cycle: one caller, acquire + release of a fresh key, ${PLAN.cycle.cycles.toLocaleString('en-US')} per round`,
    '',
    cycleTable,
    '',
    `## (2) Contended hot key: ${PLAN.hotKey.callers} callers on one key, acquire → one microtask → release, ` +
      `${PLAN.hotKey.total.toLocaleString('en-US')} acquisitions per round`,
    '',
    hotTable,
    '',
    ...(errors.length ? [...errors, ''] : []),
    '"wait": from acquire called to acquire resolved. "per caller": acquisitions of one caller in one round, the fewest and the most ' +
      `(an even share is ${Math.round(PLAN.hotKey.total / PLAN.hotKey.callers)}). "overlaps": an acquire that resolved while another ` +
      'caller held the key (must be 0).',
    '',
    '## Ours ÷ redlock-universal on the same driver (median of per-round ratios; > 1× is better for ops/s, < 1× for the others)',
    '',
    ratioTable,
    '',
    `redlock-universal: ${[...cycles.keys()].find((l) => l.library === 'redlock-universal')?.contender.settings ?? 'not run'}; ` +
      `its default retries (3 attempts, 100 ms apart) give up under this contention, so ${PEER_RETRY.retryDelay} ms apart here. ` +
      'Ours: a fixed lease, waiting woken by pub/sub.',
    '',
    `## (3) Delayed-job burst: ${PLAN.burst.jobs.toLocaleString('en-US')} jobs due now (scheduleMany), then consume with concurrency ` +
      `${PLAN.burst.concurrency} until all ran`,
    '',
    burstTable,
    '',
    '"jobs/s end to end": jobs ÷ (first scheduleMany call → last handler); the consumer starts after the enqueue.',
    '',
    ...(unavailable.length ? ['## Not available, or failed, in this run', '', ...unavailable.map((u) => `- ${u}`), ''] : []),
    environment.text,
    '',
  ].join('\n');
  process.stdout.write(`${markdown}\n`);
  if (QUICK) return;
  const json = {
    date: new Date().toISOString(),
    plan: PLAN,
    versions: environment.versions,
    unavailable,
    cycle: [...cycles].map(([l, rounds]) => ({
      contender: l.contender.name,
      rounds: rounds.map(({ usage: _u, ...r }) => r),
      ...perOp(rounds),
    })),
    hotKey: [...hot].map(([l, rounds]) => ({
      contender: l.contender.name,
      rounds: rounds.map(({ usage: _u, ...r }) => r),
      ...perOp(rounds),
    })),
    burst: [...bursts].map(([a, rounds]) => ({ driver: a.driver, rounds: rounds.map(({ usage: _u, ...r }) => r), ...perOp(rounds) })),
  };
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, 'drivers.md'), markdown);
  writeFileSync(join(RESULTS_DIR, 'drivers.json'), `${JSON.stringify(json, null, 2)}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
