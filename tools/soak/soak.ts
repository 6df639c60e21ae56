/**
 * Soak and randomized model-based checker (`npm run soak -- --help`): worker processes
 * (tools/soak/soak-worker.ts) draw random lock operations (plain, re-entrant, fair, extend,
 * multi-key, read, write, semaphore) and schedule and handle delayed jobs against a private
 * redis-server with an append-only file, while a fault driver injects lost replies, connection
 * resets, black holes, pauses (SIGSTOP, some longer than the lease), kills and Redis restarts. Each
 * worker reaches Redis through its own fault proxy. Every step is recorded in a fenced store's
 * history (tools/soak/soak-store.ts); at the end the history checker (tools/soak/history-checker.ts)
 * judges it, and the run exits non-zero on any violation.
 *
 *   npm run soak                                  # 3 workers x 1 minute
 *   npm run soak -- --processes 4 --minutes 10
 *   npm run soak -- --ci                          # 2 x 0.5 min, JSON summary line, for a CI job
 *
 * Options (environment in brackets):
 *   --processes N     worker processes [SOAK_PROCESSES] (default 3)
 *   --minutes M       duration of the faulty phase, fractions allowed [SOAK_MINUTES] (default 1)
 *   --faults LIST     comma-separated subset of kill,pause,redis-restart,blackhole,reset,lost-reply (default all)
 *   --operations LIST comma-separated subset of plain,reentrant,fair,extend,multi,read,write,semaphore
 *                     (the lock operations workers draw; default all)
 *   --fault-every MS  mean pause between two faults (default 3000)
 *   --min-faults N    keep the faulty phase going past --minutes (by at most as long again) until
 *                     every selected fault kind happened N times (default 0: stop on time)
 *   --redis-signal S  how Redis is restarted: SIGTERM (graceful, fsyncs the AOF; default) or SIGKILL
 *   --fsync MODE      appendfsync: everysec (default) or always
 *   --seed N          seed of the fault schedule and of the workers' operation draws [SOAK_SEED]
 *                     (default: random; printed)
 *   --history FILE    write the history there, one JSON event a line (default: a file in the temp dir)
 *   --json            also print the summary as one JSON line
 *   --ci              --processes 2 --minutes 0.5 --json unless given otherwise
 *
 * Faults are drawn in rounds: each round injects every selected kind once, in a seeded order.
 * Pauses alternate between longer than the lock lease (the paused holder's lease passes) and shorter.
 *
 * Violations (any: exit code 1): every rule of the history checker (fence order and reuse,
 * overlapping exclusive holds, lost updates, a hold refused by the fence while the library said it
 * was held, semaphore over-occupancy, jobs never run, run early, phantom or dead without a run); a
 * fenced row whose value is not its number of accepted writes; dead-lettered jobs; unhandled
 * rejections; crashed workers; a queue that does not drain.
 * Reported, not violations: duplicate job runs (at-least-once), stale holders stopped by the fence,
 * acquire timeouts during faults.
 *
 * All processes run on this machine: the semaphore and job-time checks compare worker clocks with
 * Redis's TIME. With --redis-signal SIGKILL and appendfsync everysec, the store's own history may lose
 * its last writes when Redis is killed; use --fsync always then.
 */
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { DelayQueueService, RedisLockModule } from '../../lib/index.js';
import { ackJobsScript } from '../../lib/delay-queue/scripts/ack-jobs.lua.js';
import { claimDueJobsScript } from '../../lib/delay-queue/scripts/claim-due-jobs.lua.js';
import { extendJobsScript } from '../../lib/delay-queue/scripts/extend-jobs.lua.js';
import { failJobScript } from '../../lib/delay-queue/scripts/fail-job.lua.js';
import { releaseJobsScript } from '../../lib/delay-queue/scripts/release-jobs.lua.js';
import { scheduleJobsScript } from '../../lib/delay-queue/scripts/schedule-jobs.lua.js';
import { ALL_LOCK_SCRIPTS } from '../../lib/lock/kinds/all-lock-kinds.js';
import { FaultProxy } from '../fault-proxy.js';
import { hasRedisServerBinary, startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { LOCK_KINDS, parseLogLine, type HistoryEvent, type LockKind } from './history.js';
import { checkHistory, describeViolations, type CheckResult } from './history-checker.js';
import {
  EXCLUSIVE_KEYS,
  FAIR_KEYS,
  JOB_VISIBILITY_MS,
  LOCK_LEASE_MS,
  READ_WRITE_KEY,
  SEMAPHORE_KEY,
  SEMAPHORE_PERMITS,
  SOAK_TOPIC,
  seededRandom,
  type WorkerStats,
} from './soak-constants.js';
import { readRow, SoakStore, soakKeys } from './soak-store.js';

export const FAULT_KINDS = ['kill', 'pause', 'redis-restart', 'blackhole', 'reset', 'lost-reply'] as const;
type FaultKind = (typeof FAULT_KINDS)[number];

const WORKER = join(import.meta.dirname, 'soak-worker.ts');
// Workers are killed and respawned all the time: the transpile cache makes a respawn cheap.
const TYPESCRIPT_LOADER = join(import.meta.dirname, '..', 'typescript-loader', 'register.js');

interface SoakOptions {
  processes: number;
  minutes: number;
  faults: FaultKind[];
  operations: LockKind[];
  faultEveryMs: number;
  minFaults: number;
  redisSignal: 'SIGTERM' | 'SIGKILL';
  fsync: 'everysec' | 'always';
  seed: number;
  history: string | undefined;
  json: boolean;
}

function parseOptions(argv: string[]): SoakOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      processes: { type: 'string' },
      minutes: { type: 'string' },
      faults: { type: 'string' },
      operations: { type: 'string' },
      'fault-every': { type: 'string' },
      'min-faults': { type: 'string' },
      'redis-signal': { type: 'string' },
      fsync: { type: 'string' },
      seed: { type: 'string' },
      history: { type: 'string' },
      json: { type: 'boolean' },
      ci: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    // The usage is this file's header comment.
    const header = /\/\*\*([\s\S]*?)\*\//.exec(readFileSync(import.meta.filename, 'utf8'))?.[1] ?? '';
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
  const operations = (values.operations ?? LOCK_KINDS.join(',')).split(',').filter(Boolean) as LockKind[];
  for (const k of operations)
    if (!LOCK_KINDS.includes(k)) throw new Error(`--operations: unknown operation ${k}; use ${LOCK_KINDS.join(',')}`);
  if (operations.length === 0) throw new Error('--operations: name at least one operation');
  const redisSignal = values['redis-signal'] ?? 'SIGTERM';
  if (redisSignal !== 'SIGTERM' && redisSignal !== 'SIGKILL') throw new Error('--redis-signal: use SIGTERM or SIGKILL');
  const fsync = values.fsync ?? 'everysec';
  if (fsync !== 'everysec' && fsync !== 'always') throw new Error('--fsync: use everysec or always');
  return {
    processes: number(
      'processes',
      values.processes ?? process.env.SOAK_PROCESSES,
      ci ? 2 : 3,
      (n) => Number.isInteger(n) && n >= 1 && n <= 64,
    ),
    minutes: number('minutes', values.minutes ?? process.env.SOAK_MINUTES, ci ? 0.5 : 1, (n) => n > 0 && n <= 24 * 60),
    faults,
    operations,
    faultEveryMs: number('fault-every', values['fault-every'], 3_000, (n) => n >= 100),
    minFaults: number('min-faults', values['min-faults'], 0, (n) => Number.isInteger(n) && n >= 0),
    redisSignal,
    fsync,
    seed: number('seed', values.seed ?? process.env.SOAK_SEED, randomInt(2 ** 31), (n) => Number.isInteger(n) && n >= 0),
    history: values.history,
    json: values.json === true || ci,
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
  /** Stopped producing after SIGUSR2: everything it scheduled is in the history. */
  idle = false;
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
    this.child = spawn(process.execPath, ['--enable-source-maps', '--import', TYPESCRIPT_LOADER, WORKER], {
      cwd: join(import.meta.dirname, '..', '..'),
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (line === 'READY') this.ready = true;
      else if (line === 'IDLE') this.idle = true;
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
  private readonly faultKinds = new Map<FaultKind, number>();
  private readonly retired: WorkerStats[] = [];
  private readonly workers: WorkerProcess[] = [];
  private readonly proxies: FaultProxy[] = [];
  private readonly incarnations: number[] = [];
  private readonly history: HistoryEvent[] = [];
  private readonly unrun = new Set<string>();
  private readonly ran = new Set<string>();
  private historyLoad: Promise<HistoryEvent[]> = Promise.resolve([]);
  private readonly historyFile: string;
  private readonly historyOut: WriteStream;
  private faultySeconds = 0;
  /** Fault kinds still to inject in the current round (each round: every kind once, seeded order). */
  private round: FaultKind[] = [];
  private pauses = 0;
  private readonly scriptNames = new Map(
    [...ALL_LOCK_SCRIPTS, ackJobsScript, claimDueJobsScript, extendJobsScript, failJobScript, releaseJobsScript, scheduleJobsScript].map(
      (script) => [script.sha, script.name] as const,
    ),
  );
  private redis!: LocalRedisServer;
  private store!: Redis;
  /** The driver's own entries in the history: when each fault began and ended. */
  private faultLog!: SoakStore;
  private stopping = false;

  constructor(private readonly options: SoakOptions) {
    this.random = seededRandom(options.seed);
    this.historyFile = options.history ?? join(tmpdir(), `soak-history-${options.seed}-${this.prefix}.jsonl`);
    this.historyOut = createWriteStream(this.historyFile);
  }

  async run(): Promise<boolean> {
    const o = this.options;
    if (!hasRedisServerBinary()) throw new Error('The soak needs redis-server on PATH (it restarts its own private server).');
    this.redis = await startLocalRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', o.fsync] });
    this.store = new Redis(this.redis.url, { maxRetriesPerRequest: null });
    this.store.on('error', () => undefined);
    this.faultLog = new SoakStore(this.store, this.keys);
    const version = /redis_version:(\S+)/.exec(await this.store.info('server'))?.[1];
    this.log(
      `soak: ${o.processes} worker(s) x ${o.minutes} min, operations ${o.operations.join(',')}, ` +
        `faults ${o.faults.join(',')} about every ${o.faultEveryMs} ms, ` +
        (`seed ${o.seed}; redis-server ${version} (appendonly yes, appendfsync ${o.fsync}, restarted with ${o.redisSignal}) ` +
          `at ${this.redis.url}`),
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
      const latestEnd = end + o.minutes * 60_000;
      const enoughFaults = () => o.faults.every((kind) => (this.faultKinds.get(kind) ?? 0) >= o.minFaults);
      const faultyPhase = () => performance.now() < end || (!enoughFaults() && performance.now() < latestEnd);
      let nextProgress = started + 30_000;
      while (faultyPhase()) {
        await sleep(Math.max(0, Math.min((enoughFaults() ? end : latestEnd) - performance.now(), o.faultEveryMs * (0.5 + this.random()))));
        if (!faultyPhase()) break;
        await this.injectFault(this.nextFaultKind());
        await this.loadHistory();
        if (performance.now() >= nextProgress) {
          nextProgress += 30_000;
          this.log(`  ${Math.round((performance.now() - started) / 1000)} s: ${this.progress()}`);
        }
      }

      this.faultySeconds = Math.round((performance.now() - started) / 1000);
      this.log(
        `faulty phase over after ${this.faultySeconds} s: healing the network, stopping new work, letting every scheduled job run...`,
      );
      for (const proxy of this.proxies) {
        proxy.heal();
      }
      await this.waitUntil(() => this.workers.every((w) => w.ready), 60_000, 'every worker to be up');
      // Jobs count as drained only once no worker can schedule another one (a worker respawned
      // after a crash is told too, once it is up).
      await this.waitUntil(
        () => {
          for (const w of this.workers) if (w.ready && !w.idle) w.signal('SIGUSR2');
          return this.workers.every((w) => w.idle);
        },
        60_000,
        'every worker to stop producing',
      );
      const queue = monitor.get(DelayQueueService);
      const settled = await this.waitUntil(
        async () => {
          await this.loadHistory();
          const unrun = this.unrunJobs();
          const stats = await queue.stats(SOAK_TOPIC).catch(() => undefined);
          return unrun.length === 0 && stats !== undefined && stats.scheduled + stats.due + stats.active === 0;
        },
        60_000 + 10 * JOB_VISIBILITY_MS,
        'every scheduled job to be handled',
        false,
      );
      const dead = (await queue.deadLetters(SOAK_TOPIC, { limit: 10_000 })).map((job) => job.id);
      await this.stopWorkers();
      return await this.summarize(settled, dead);
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
        SOAK_SEED: String(this.options.seed),
        SOAK_OPERATIONS: this.options.operations.join(','),
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

  /** Counts one injected fault: `kind` is one of FAULT_KINDS, `detail` what exactly happened. */
  private count(kind: FaultKind, detail: string): void {
    this.faultKinds.set(kind, (this.faultKinds.get(kind) ?? 0) + 1);
    this.faults.set(detail, (this.faults.get(detail) ?? 0) + 1);
    this.noteFault(`end: ${detail}`);
  }

  /** Puts a fault in the history, so a violation can be read next to the faults around it. */
  private noteFault(fault: string): void {
    void this.faultLog.record({ w: 'driver', op: 'fault', fault }).catch(() => undefined);
  }

  private nextFaultKind(): FaultKind {
    if (this.round.length === 0) {
      this.round = [...this.options.faults];
      for (let i = this.round.length - 1; i > 0; i--) {
        const j = Math.floor(this.random() * (i + 1));
        [this.round[i], this.round[j]] = [this.round[j], this.round[i]];
      }
    }
    return this.round.shift()!;
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
        this.noteFault(`start: kill -9 ${victim.name}`);
        victim.signal('SIGKILL');
        await victim.exited;
        this.retire(victim);
        this.spawn(victim.slot);
        this.count(kind, 'kill -9 worker');
        return;
      }
      case 'pause': {
        const victim = this.pickWorker();
        if (!victim) return;
        // A GC pause or a frozen VM: every other one outlasts the lock lease, so the paused holder's
        // lease passes and its late fenced writes must be refused.
        const long = this.pauses++ % 2 === 0;
        this.noteFault(`start: SIGSTOP ${victim.name}`);
        victim.signal('SIGSTOP');
        await sleep(long ? between(LOCK_LEASE_MS + 500, LOCK_LEASE_MS + 2_500) : between(200, LOCK_LEASE_MS - 300));
        victim.signal('SIGCONT');
        this.count(kind, long ? 'pause worker (SIGSTOP) longer than the lease' : 'pause worker (SIGSTOP) shorter than the lease');
        return;
      }
      case 'redis-restart': {
        this.noteFault('start: restart redis');
        await this.redis.restart({ signal: this.options.redisSignal, downtimeMs: between(200, 1_500) });
        this.count(kind, `restart redis (${this.options.redisSignal})`);
        return;
      }
      case 'blackhole': {
        // Not combined with an armed lost reply on the same proxy (the proxy does not support both).
        const candidates = this.proxies.filter((p) => p.pendingLostReplies === 0);
        if (candidates.length === 0) return;
        const proxy = candidates[Math.floor(this.random() * candidates.length)];
        this.noteFault(`start: blackhole proxy ${this.proxies.indexOf(proxy)}`);
        proxy.blackhole();
        await sleep(between(500, 4_000));
        if (this.random() < 0.5) {
          proxy.heal(); // the partition ends in time: held bytes are delivered
          this.count(kind, 'blackhole, then heal');
        } else {
          proxy.resetAll(); // the partition outlasted TCP: connections die
          proxy.heal();
          this.count(kind, 'blackhole, then reset');
        }
        return;
      }
      case 'reset': {
        const slot = Math.floor(this.random() * this.proxies.length);
        this.noteFault(`start: reset proxy ${slot}`);
        this.proxies[slot].resetAll();
        this.count(kind, 'reset connections');
        return;
      }
      case 'lost-reply': {
        // The reply of one of the next few scripts a worker sends is dropped after Redis ran it, and
        // the connection reset: ioredis sends it again, so it runs twice.
        const slot = Math.floor(this.random() * this.proxies.length);
        const proxy = this.proxies[slot];
        const isScript = (args: readonly string[]) => ['evalsha', 'eval'].includes(args[0]?.toLowerCase());
        this.noteFault(`start: lose a reply on proxy ${slot}`);
        const lost = proxy.loseReply(isScript, between(1, 4)).then((args) => {
          const name =
            this.scriptNames.get(args[1]) ?? (args[0].toLowerCase() === 'eval' ? 'a script by body' : `script ${args[1]?.slice(0, 8)}`);
          this.count(kind, `lost reply (${name})`);
        });
        // Wait for it (a worker always has scripts in flight), so faults do not pile up on one proxy.
        await Promise.race([lost, sleep(5_000)]);
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
      `lock operations ${t.operations ?? 0} (${t.acquired ?? 0} acquired), stale holders stopped by the ` +
      `fence ${t.staleStoppedByFence ?? 0}, ` +
      (`jobs scheduled ${t.jobsScheduled ?? 0}, handler runs ${t.handlerRuns ?? 0}, faults ${faults}, violations ` +
        `so far ${this.violations.length}`)
    );
  }

  /**
   * The history recorded so far: moves what the store logged since the last call into memory and
   * the history file (only the store appends to the log, so trimming what was read loses nothing;
   * Redis stays small, and a restart reloads a short AOF). One call at a time.
   */
  private loadHistory(): Promise<HistoryEvent[]> {
    this.historyLoad = this.historyLoad.then(async () => {
      for (;;) {
        const lines = await this.store.lrange(this.keys.log, 0, 9_999);
        if (lines.length === 0) return this.history;
        await this.store.ltrim(this.keys.log, lines.length, -1);
        for (const line of lines) {
          const event = parseLogLine(line);
          this.history.push(event);
          if (event.op === 'scheduled') this.unrun.add(event.job!);
          else if (event.op === 'run') this.ran.add(event.job!);
          if (!this.historyOut.write(`${JSON.stringify(event)}\n`))
            await new Promise<void>((resolve) => this.historyOut.once('drain', () => resolve()));
        }
        if (lines.length < 10_000) return this.history;
      }
    });
    return this.historyLoad;
  }

  /** How often each call failed, and why: `acquire-failed LOCK_ACQUIRE_TIMEOUT` and the like. */
  private errorTally(history: readonly HistoryEvent[]): Record<string, number> {
    const tally: Record<string, number> = {};
    for (const e of history) {
      if (e.error === undefined) continue;
      const name = `${e.op} ${e.error}`;
      tally[name] = (tally[name] ?? 0) + 1;
    }
    return tally;
  }

  /** Jobs whose schedule() resolved and that have not run yet (as far as the history loaded so far shows). */
  private unrunJobs(): string[] {
    for (const job of this.unrun) if (this.ran.has(job)) this.unrun.delete(job);
    return [...this.unrun];
  }

  private async summarize(settled: boolean, dead: string[]): Promise<boolean> {
    const totals = this.totals();
    const history = await this.loadHistory();
    const historyFile = this.historyFile;
    await new Promise<void>((resolve, reject) => this.historyOut.end((error?: Error | null) => (error ? reject(error) : resolve())));
    const check: CheckResult = checkHistory(history, {
      permits: { [SEMAPHORE_KEY]: SEMAPHORE_PERMITS },
      deadJobs: dead,
      requireAllJobsRan: true,
    });
    const keys = [...EXCLUSIVE_KEYS, ...FAIR_KEYS, READ_WRITE_KEY];
    const rows = await Promise.all(keys.map(async (name) => ({ name, ...(await readRow(this.store, this.keys.row(name))) })));
    for (const row of rows) {
      if (row.value !== row.writes)
        this.violations.push({ kind: 'counter-mismatch', lock: row.name, value: row.value, acceptedWrites: row.writes });
    }
    for (const id of dead) this.violations.push({ kind: 'dead-lettered', job: id });
    if (!settled) this.violations.push({ kind: 'queue-not-drained', unrunJobs: this.unrunJobs().slice(0, 20) });
    const byRule: Record<string, number> = {};
    for (const v of check.violations) byRule[v.rule] = (byRule[v.rule] ?? 0) + 1;
    for (const v of this.violations) byRule[v.kind] = (byRule[v.kind] ?? 0) + 1;
    const f = check.figures;
    const summary = {
      seed: this.options.seed,
      processes: this.options.processes,
      minutes: this.options.minutes,
      operationKinds: this.options.operations,
      faultySeconds: this.faultySeconds,
      historyEvents: f.events,
      historyFile,
      operations: Object.fromEntries(
        Object.entries(f.byKind).map(([kind, k]) => [
          kind,
          kind === 'semaphore'
            ? {
                holds: k.holds,
                acquireFailed: k.acquireFailed,
                countedIn: f.semaphore.enters,
                permitEndedBeforeUse: f.semaphore.refusedExpired,
              }
            : k,
        ]),
      ),
      semaphoreMaxOccupancy: f.semaphore.maxOccupancy,
      staleHoldersStoppedByFence: Object.values(f.byKind).reduce((n, k) => n + k.refusedByFence, 0),
      lockErrors: totals.lockErrors ?? 0,
      errors: this.errorTally(history),
      faults: Object.fromEntries(this.faults),
      faultsByKind: Object.fromEntries(this.options.faults.map((kind) => [kind, this.faultKinds.get(kind) ?? 0])),
      violations: byRule,
      violationCount: check.violations.length + this.violations.length,
      jobs: {
        scheduled: f.jobs.scheduled,
        scheduleFailed: f.jobs.scheduleFailed,
        handled: f.jobs.ran,
        lost: this.unrunJobs().length,
        dead: dead.length,
        handlerRuns: f.jobs.runs,
        duplicates: f.jobs.duplicates,
      },
      counters: rows,
    };
    const failed = summary.violationCount > 0;
    const lines = [
      '',
      `history      ${f.events} events, checked; written to ${historyFile}`,
      `operations   ${Object.entries(summary.operations)
        .map(
          ([k, v]) =>
            `${k} ${Object.entries(v)
              .map(([n, c]) => `${n} ${c}`)
              .join(' ')}`,
        )
        .join('; ')}`,
      `             semaphore max occupancy ${f.semaphore.maxOccupancy} of ${SEMAPHORE_PERMITS}, stale ` +
        `holders stopped by the fence ${summary.staleHoldersStoppedByFence}, lock errors ${summary.lockErrors}`,
      `errors       ${
        Object.entries(summary.errors)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || 'none'
      }`,
      `faults       ${
        Object.entries(summary.faults)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || 'none'
      }`,
      `violations   ${summary.violationCount}${
        summary.violationCount > 0
          ? ` (${Object.entries(byRule)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ')})`
          : ''
      }`,
      `jobs         ${Object.entries(summary.jobs)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
      `counters     ${rows.map((r) => `${r.name}: value ${r.value}, accepted writes ${r.writes}, last token ${r.seen}`).join('; ')}`,
      ...(check.violations.length > 0 ? [describeViolations(check.violations)] : []),
      ...this.violations.slice(0, 20).map((v) => `violation: ${JSON.stringify(v)}`),
      `seed         ${this.options.seed} (npm run soak -- --seed ${this.options.seed} draws the same faults and operations)`,
      `result       ${failed ? 'FAIL' : 'PASS'}`,
    ];
    this.log(lines.join('\n'));
    if (this.options.json) {
      const violationsDetail = check.violations.slice(0, 20).map((v) => ({ rule: v.rule, message: v.message, events: v.events }));
      process.stdout.write(
        `SOAK_SUMMARY ${JSON.stringify({
          ...summary,
          result: failed ? 'FAIL' : 'PASS',
          violationsDetail,
          otherViolations: this.violations.slice(0, 20),
        })}\n`,
      );
    }
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
