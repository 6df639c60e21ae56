/**
 * Soak test (`npm run soak -- --help`): worker processes (tools/soak/soak-worker.ts) do mixed lock, semaphore and delayed-job
 * work against a private redis-server with an append-only file, while faults are injected at
 * random. At the end it checks the invariants and exits non-zero if any broke.
 *
 *   npm run soak                                  # 3 workers x 1 minute
 *   npm run soak -- --processes 4 --minutes 5
 *   npm run soak -- --ci                          # 2 x 0.5 min, JSON summary line, for a CI job
 *
 * Options (environment in brackets):
 *   --processes N     worker processes [SOAK_PROCESSES] (default 3)
 *   --minutes M       duration of the faulty phase, fractions allowed [SOAK_MINUTES] (default 1)
 *   --faults LIST     comma-separated subset of kill,pause,redis-restart,blackhole,reset (default all)
 *   --fault-every MS  mean pause between two faults (default 3000)
 *   --redis-signal S  how Redis is restarted: SIGTERM (graceful, fsyncs the AOF; default) or SIGKILL
 *   --fsync MODE      appendfsync: everysec (default) or always
 *   --seed N          seed of the fault schedule (default: random; printed)
 *   --json            also print the summary as one JSON line
 *   --ci              --processes 2 --minutes 0.5 --json unless given otherwise
 *
 * Invariants (any breach: exit code 1):
 *   - two holders at once: a lock holder refused by its fenced row while the library still said it
 *     held the lock (a newer token got in during its lease), or more semaphore holders than permits;
 *   - counter mismatch: a fenced row whose value is not its number of accepted writes;
 *   - jobs lost (scheduled, never handled) or dead-lettered; unhandled rejections; crashed workers.
 * Reported, not breaches: duplicates (at-least-once: a worker killed, paused or cut off mid-job),
 * stale holders stopped by the fence, lock acquire timeouts during faults.
 *
 * All processes run on this machine: the semaphore check compares worker clocks with Redis's TIME.
 */
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { DelayQueueService, RedisLockModule } from '../../lib';
import { FaultProxy } from '../fault-proxy';
import { hasRedisServerBinary, startLocalRedisServer, type LocalRedisServer } from '../local-redis-server';
import { JOB_VISIBILITY_MS, MUTEX_KEYS, SOAK_TOPIC, type WorkerStats } from './soak-constants';
import { readRow, soakKeys } from './soak-store';

const FAULT_KINDS = ['kill', 'pause', 'redis-restart', 'blackhole', 'reset'] as const;
type FaultKind = (typeof FAULT_KINDS)[number];

const WORKER = join(__dirname, 'soak-worker.ts');
// Workers are killed and respawned all the time: the transpile cache makes a respawn cheap.
const TS_REGISTER = join(__dirname, 'cached-ts-register.js');

interface SoakOptions {
  processes: number;
  minutes: number;
  faults: FaultKind[];
  faultEveryMs: number;
  redisSignal: 'SIGTERM' | 'SIGKILL';
  fsync: 'everysec' | 'always';
  seed: number;
  json: boolean;
}

function parseOptions(argv: string[]): SoakOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      processes: { type: 'string' },
      minutes: { type: 'string' },
      faults: { type: 'string' },
      'fault-every': { type: 'string' },
      'redis-signal': { type: 'string' },
      fsync: { type: 'string' },
      seed: { type: 'string' },
      json: { type: 'boolean' },
      ci: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    // The usage is this file's header comment.
    const header = /\/\*\*([\s\S]*?)\*\//.exec(readFileSync(__filename, 'utf8'))?.[1] ?? '';
    process.stdout.write(`${header.replace(/^ \* ?/gm, '').trim()}\n`);
    process.exit(0);
  }
  const ci = values.ci === true;
  const number = (name: string, raw: string | undefined, fallback: number, check: (n: number) => boolean): number => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!check(n)) throw new Error(`--${name} ${raw}: not a valid value`);
    return n;
  };
  const faults = (values.faults ?? FAULT_KINDS.join(',')).split(',').filter(Boolean) as FaultKind[];
  for (const f of faults) if (!FAULT_KINDS.includes(f)) throw new Error(`--faults: unknown fault ${f}; use ${FAULT_KINDS.join(',')}`);
  const redisSignal = values['redis-signal'] ?? 'SIGTERM';
  if (redisSignal !== 'SIGTERM' && redisSignal !== 'SIGKILL') throw new Error('--redis-signal: use SIGTERM or SIGKILL');
  const fsync = values.fsync ?? 'everysec';
  if (fsync !== 'everysec' && fsync !== 'always') throw new Error('--fsync: use everysec or always');
  return {
    processes: number('processes', values.processes ?? process.env.SOAK_PROCESSES, ci ? 2 : 3, (n) => Number.isInteger(n) && n >= 1 && n <= 64),
    minutes: number('minutes', values.minutes ?? process.env.SOAK_MINUTES, ci ? 0.5 : 1, (n) => n > 0 && n <= 24 * 60),
    faults,
    faultEveryMs: number('fault-every', values['fault-every'], 3_000, (n) => n >= 100),
    redisSignal,
    fsync,
    seed: number('seed', values.seed, randomInt(2 ** 31), (n) => Number.isInteger(n)),
    json: values.json === true || ci,
  };
}

/** Small seeded PRNG (mulberry32): the same seed gives the same fault schedule. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Violation {
  readonly kind: string;
  readonly [detail: string]: unknown;
}

/** One incarnation of a worker process in one slot. */
class WorkerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  ready = false;
  stats?: WorkerStats;
  /** Killed or stopped on purpose: its exit is not a crash. */
  expectedExit = false;
  /** Gone, and its last stats counted with the retired ones. */
  retired = false;
  private stderrTail = '';

  constructor(
    readonly slot: number,
    readonly incarnation: number,
    env: Record<string, string>,
    onViolation: (v: Violation) => void,
  ) {
    this.child = spawn(process.execPath, ['--enable-source-maps', '-r', TS_REGISTER, WORKER], {
      cwd: join(__dirname, '..', '..'),
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (line === 'READY') this.ready = true;
      else if (line.startsWith('STATS ')) this.stats = JSON.parse(line.slice(6)) as WorkerStats;
      else if (line.startsWith('VIOLATION ')) onViolation({ ...(JSON.parse(line.slice(10)) as Violation), worker: this.name });
      else process.stdout.write(`[${this.name}] ${line}\n`);
    });
    createInterface({ input: this.child.stderr! }).on('line', (line) => {
      this.stderrTail = `${this.stderrTail}\n${line}`.slice(-4_000);
      process.stderr.write(`[${this.name}] ${line}\n`);
    });
  }

  get name(): string {
    return `w${this.slot}.${this.incarnation}`;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  get lastErrors(): string {
    return this.stderrTail.trim();
  }

  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.child.kill(signal);
  }
}

class Soak {
  private readonly random: () => number;
  private readonly prefix = `soak-${randomInt(2 ** 31).toString(36)}`;
  private readonly keys = soakKeys(this.prefix);
  private readonly violations: Violation[] = [];
  private readonly faults = new Map<string, number>();
  private readonly retired: WorkerStats[] = [];
  private readonly workers: WorkerProcess[] = [];
  private readonly proxies: FaultProxy[] = [];
  private readonly incarnations: number[] = [];
  private redis!: LocalRedisServer;
  private store!: Redis;
  private stopping = false;

  constructor(private readonly options: SoakOptions) {
    this.random = seededRandom(options.seed);
  }

  async run(): Promise<boolean> {
    const o = this.options;
    if (!hasRedisServerBinary()) throw new Error('The soak needs redis-server on PATH (it restarts its own private server).');
    this.redis = await startLocalRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', o.fsync] });
    this.store = new Redis(this.redis.url, { maxRetriesPerRequest: null });
    this.store.on('error', () => undefined);
    const version = /redis_version:(\S+)/.exec(await this.store.info('server'))?.[1];
    this.log(
      `soak: ${o.processes} worker(s) x ${o.minutes} min, faults ${o.faults.join(',')} about every ${o.faultEveryMs} ms, ` +
        `seed ${o.seed}; redis-server ${version} (appendonly yes, appendfsync ${o.fsync}, restarted with ${o.redisSignal}) at ${this.redis.url}`,
    );
    const monitor = await NestFactory.createApplicationContext(
      RedisLockModule.forRoot({ redis: this.redis.url, keyPrefix: `${this.prefix}:lib`, connectTimeout: 0 }),
      { logger: false },
    );
    try {
      for (let slot = 0; slot < o.processes; slot++) {
        this.proxies.push(await FaultProxy.start({ port: this.redis.port }));
        this.incarnations.push(0);
        this.spawn(slot);
      }
      await this.waitUntil(() => this.workers.every((w) => w.ready), 120_000, 'every worker to start');

      const started = performance.now();
      const end = started + o.minutes * 60_000;
      let nextProgress = started + 30_000;
      while (performance.now() < end) {
        await sleep(Math.min(end - performance.now(), o.faultEveryMs * (0.5 + this.random())));
        if (performance.now() >= end) break;
        await this.injectFault(o.faults[Math.floor(this.random() * o.faults.length)]);
        if (performance.now() >= nextProgress) {
          nextProgress += 30_000;
          this.log(`  ${Math.round((performance.now() - started) / 1000)} s: ${this.progress()}`);
        }
      }

      this.log('faulty phase over: healing the network, stopping new work, letting every scheduled job run...');
      for (const proxy of this.proxies) {
        proxy.heal();
      }
      await this.waitUntil(() => this.workers.every((w) => w.ready), 60_000, 'every worker to be up');
      for (const w of this.workers) w.signal('SIGUSR2');
      const queue = monitor.get(DelayQueueService);
      const settled = await this.waitUntil(
        async () => {
          const ledger = await this.ledger();
          const stats = await queue.stats(SOAK_TOPIC).catch(() => undefined);
          return ledger.lost.length === 0 && stats !== undefined && stats.scheduled + stats.due + stats.active === 0;
        },
        60_000 + 10 * JOB_VISIBILITY_MS,
        'every scheduled job to be handled',
        false,
      );
      const queueStats = await queue.stats(SOAK_TOPIC);
      await this.stopWorkers();
      return await this.summarize(settled, queueStats.dead);
    } finally {
      this.stopping = true;
      for (const w of this.workers) w.signal('SIGKILL');
      await monitor.close();
      this.store.disconnect();
      for (const proxy of this.proxies) await proxy.stop();
      await this.redis.stop();
    }
  }

  private spawn(slot: number): void {
    const incarnation = ++this.incarnations[slot];
    const worker = new WorkerProcess(
      slot,
      incarnation,
      {
        SOAK_LIB_URL: this.proxies[slot].url,
        SOAK_STORE_URL: this.redis.url,
        SOAK_PREFIX: this.prefix,
        SOAK_WORKER: String(slot),
        SOAK_INCARNATION: String(incarnation),
      },
      (violation) => {
        this.violations.push(violation);
        this.log(`VIOLATION ${JSON.stringify(violation)}`);
      },
    );
    this.workers[slot] = worker;
    void worker.exited.then(({ code, signal }) => {
      if (worker.expectedExit || this.stopping) return;
      this.violations.push({ kind: 'worker-crashed', worker: worker.name, code, signal, stderr: worker.lastErrors });
      this.log(`VIOLATION worker ${worker.name} exited on its own (${code ?? signal}):\n${worker.lastErrors}`);
      this.retire(worker);
      this.spawn(slot);
    });
  }

  private retire(worker: WorkerProcess): void {
    if (worker.retired) return;
    worker.retired = true;
    if (worker.stats) this.retired.push(worker.stats);
  }

  private count(fault: string): void {
    this.faults.set(fault, (this.faults.get(fault) ?? 0) + 1);
  }

  private pickWorker(): WorkerProcess | undefined {
    const ready = this.workers.filter((w) => w.ready && w.alive);
    return ready.length === 0 ? undefined : ready[Math.floor(this.random() * ready.length)];
  }

  private async injectFault(kind: FaultKind): Promise<void> {
    const between = (min: number, max: number) => Math.round(min + this.random() * (max - min));
    switch (kind) {
      case 'kill': {
        const victim = this.pickWorker();
        if (!victim) return;
        victim.expectedExit = true;
        victim.signal('SIGKILL');
        await victim.exited;
        this.retire(victim);
        this.spawn(victim.slot);
        this.count('kill -9 worker');
        return;
      }
      case 'pause': {
        const victim = this.pickWorker();
        if (!victim) return;
        victim.signal('SIGSTOP'); // a GC pause or a frozen VM: longer than the lock lease at times
        await sleep(between(500, 3_000));
        victim.signal('SIGCONT');
        this.count('pause worker (SIGSTOP)');
        return;
      }
      case 'redis-restart': {
        await this.redis.restart({ signal: this.options.redisSignal, downtimeMs: between(200, 1_500) });
        this.count(`restart redis (${this.options.redisSignal})`);
        return;
      }
      case 'blackhole': {
        const proxy = this.proxies[Math.floor(this.random() * this.proxies.length)];
        proxy.blackhole();
        await sleep(between(500, 4_000));
        if (this.random() < 0.5) {
          proxy.heal(); // the partition ends in time: held bytes are delivered
          this.count('blackhole, then heal');
        } else {
          proxy.resetAll(); // the partition outlasted TCP: connections die
          proxy.heal();
          this.count('blackhole, then reset');
        }
        return;
      }
      case 'reset': {
        this.proxies[Math.floor(this.random() * this.proxies.length)].resetAll();
        this.count('reset connections');
        return;
      }
    }
  }

  private async stopWorkers(): Promise<void> {
    await Promise.all(
      this.workers.map(async (worker) => {
        worker.expectedExit = true;
        worker.signal('SIGTERM');
        const timer = setTimeout(() => {
          this.violations.push({ kind: 'slow-shutdown', worker: worker.name, detail: 'still running 30 s after SIGTERM' });
          worker.signal('SIGKILL');
        }, 30_000);
        const { code, signal } = await worker.exited;
        clearTimeout(timer);
        if (code !== 0 && signal !== 'SIGKILL') {
          this.violations.push({ kind: 'unclean-shutdown', worker: worker.name, code, signal, stderr: worker.lastErrors });
        }
        this.retire(worker);
      }),
    );
  }

  private totals(): WorkerStats {
    const all = [...this.retired, ...this.workers.filter((w) => !w.retired).map((w) => w.stats)];
    const sum = {} as Record<string, number>;
    for (const stats of all) {
      if (!stats) continue;
      for (const [key, value] of Object.entries(stats)) sum[key] = (sum[key] ?? 0) + value;
    }
    return sum as unknown as WorkerStats;
  }

  private progress(): string {
    const t = this.totals();
    const faults = [...this.faults.values()].reduce((a, b) => a + b, 0);
    return (
      `lock sections ${t.lockSections ?? 0}, semaphore sections ${t.semaphoreSections ?? 0}, jobs scheduled ${t.jobsScheduled ?? 0}, ` +
      `handler runs ${t.handlerRuns ?? 0}, faults ${faults}, violations ${this.violations.length}`
    );
  }

  /** The job ledger: what was scheduled (schedule() resolved) and every handler run. */
  private async ledger() {
    const scheduled = new Set(await this.store.smembers(this.keys.scheduled));
    const runs = new Map<string, number>();
    for (const entry of await this.store.smembers(this.keys.handlings)) {
      const id = entry.slice(0, entry.lastIndexOf('|'));
      runs.set(id, (runs.get(id) ?? 0) + 1);
    }
    const lost = [...scheduled].filter((id) => !runs.has(id));
    return { scheduled, runs, lost };
  }

  private async summarize(settled: boolean, dead: number): Promise<boolean> {
    const totals = this.totals();
    const { scheduled, runs, lost } = await this.ledger();
    const duplicated = [...runs.values()].filter((n) => n > 1);
    const rows = await Promise.all(MUTEX_KEYS.map(async ({ name }) => ({ name, ...(await readRow(this.store, this.keys.row(name))) })));
    for (const row of rows) {
      if (row.value !== row.writes) this.violations.push({ kind: 'counter-mismatch', lock: row.name, value: row.value, acceptedWrites: row.writes });
    }
    const byKind = (kind: string) => this.violations.filter((v) => v.kind === kind).length;
    const summary = {
      seed: this.options.seed,
      processes: this.options.processes,
      minutes: this.options.minutes,
      operations: {
        lockSections: totals.lockSections ?? 0,
        fencedWritesAccepted: rows.reduce((n, r) => n + r.writes, 0),
        staleHoldersStoppedByFence: totals.staleRejected ?? 0,
        lockAcquireTimeouts: totals.lockTimeouts ?? 0,
        lockErrors: totals.lockErrors ?? 0,
        semaphoreSections: totals.semaphoreSections ?? 0,
        semaphorePermitsExpiredBeforeUse: totals.semaphoreSkipped ?? 0,
        scheduleErrors: totals.scheduleErrors ?? 0,
        handlerRuns: [...runs.values()].reduce((n, count) => n + count, 0),
        handlerErrors: totals.handlerErrors ?? 0,
      },
      faults: Object.fromEntries(this.faults),
      violations: {
        twoHoldersAtOnce: byKind('two-holders-at-once'),
        tooManySemaphoreHolders: byKind('too-many-semaphore-holders'),
        counterMismatch: byKind('counter-mismatch'),
        unhandledRejections: byKind('unhandled-rejection'),
        workerCrashes: byKind('worker-crashed'),
        uncleanShutdowns: byKind('unclean-shutdown') + byKind('slow-shutdown'),
      },
      jobs: {
        scheduled: scheduled.size,
        handled: [...scheduled].filter((id) => runs.has(id)).length,
        lost: lost.length,
        dead,
        duplicates: duplicated.reduce((n, count) => n + count - 1, 0),
        jobsHandledMoreThanOnce: duplicated.length,
        handledButScheduleUnrecorded: [...runs.keys()].filter((id) => !scheduled.has(id)).length,
      },
      counters: rows,
    };
    const failed = this.violations.length > 0 || lost.length > 0 || dead > 0 || !settled;
    const lines = [
      '',
      '(counts from the fenced rows and the job ledger are exact; the others are summed from the workers\' reports,',
      ' which miss up to a second of work of each killed worker)',
      `operations   ${Object.entries(summary.operations).map(([k, v]) => `${k} ${v}`).join(', ')}`,
      `faults       ${Object.entries(summary.faults).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}`,
      `violations   ${Object.entries(summary.violations).map(([k, v]) => `${k} ${v}`).join(', ')}`,
      `jobs         ${Object.entries(summary.jobs).map(([k, v]) => `${k} ${v}`).join(', ')}`,
      `counters     ${rows.map((r) => `${r.name}: value ${r.value}, accepted writes ${r.writes}, last token ${r.seen}`).join('; ')}`,
      ...(lost.length > 0 ? [`lost job ids (first 20): ${lost.slice(0, 20).join(', ')}`] : []),
      ...(settled ? [] : ['the queue did not drain before the settle timeout']),
      ...this.violations.slice(0, 20).map((v) => `violation: ${JSON.stringify(v)}`),
      `result       ${failed ? 'FAIL' : 'PASS'}`,
    ];
    this.log(lines.join('\n'));
    if (this.options.json) process.stdout.write(`SOAK_SUMMARY ${JSON.stringify({ ...summary, result: failed ? 'FAIL' : 'PASS' })}\n`);
    return !failed;
  }

  private async waitUntil(predicate: () => boolean | Promise<boolean>, timeoutMs: number, what: string, required = true): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (!(await predicate())) {
      if (performance.now() > deadline) {
        if (required) throw new Error(`soak: timed out after ${timeoutMs} ms waiting for ${what}`);
        return false;
      }
      await sleep(250);
    }
    return true;
  }

  private log(line: string): void {
    process.stdout.write(`${line}\n`);
  }
}

async function main(): Promise<void> {
  const soak = new Soak(parseOptions(process.argv.slice(2)));
  const passed = await soak.run();
  process.exit(passed ? 0 : 1);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error)?.stack ?? error}\n`);
  process.exit(2);
});
