/**
 * The scheduled-work checker (`npm run soak:scheduled -- --help`): a randomized, model-based run of
 * the outbox, repeatable jobs, `@OnOneInstance` and `@LeaderElection` under faults. Worker processes
 * (worker.ts) share a private redis-server (AOF, `appendfsync always`), each through its own fault
 * proxy, and a private PostgreSQL database (the outbox). Every effect they see is appended to a
 * history file per process (history-file.ts); the driver adds each fault's start and end. At the
 * end the checker (checker.ts) judges the merged history and what Redis holds; the run exits
 * non-zero on any violation, a crashed worker, an unhandled rejection or a fault kind that did not
 * happen often enough.
 *
 *   npm run soak:scheduled                                   # 3 workers x 1 minute
 *   npm run soak:scheduled -- --processes 3 --minutes 10 --min-faults 10
 *
 * Options:
 *   --processes N     worker processes (default 3)
 *   --minutes M       duration of the faulty phase, fractions allowed (default 1)
 *   --faults LIST     comma-separated subset of kill,kill-after-commit,pause,stall,redis-aof,redis-empty,lost-reply (default all)
 *   --fault-every MS  mean pause between two faults (default 2500)
 *   --min-faults N    keep the faulty phase going (by at most as long again) until every selected
 *                     fault kind happened N times, and fail if one did not (default 1)
 *   --seed N          seed of the fault schedule and of the workers' draws (default: random; printed)
 *   --dir DIR         where the history files go (default: a new temp directory)
 *   --json            also print the summary as one `SW_SUMMARY {json}` line
 *
 * Faults, drawn in rounds (each round: every selected kind once, seeded order):
 *   kill               SIGKILL of a worker (respawned)
 *   kill-after-commit  a worker SIGKILLs itself from its after-commit hook, right after a COMMIT and
 *                      before the outbox wrote anything to Redis (respawned)
 *   pause              SIGSTOP of a worker for 1.5-3 s, past the 1 s lease of its leadership and
 *                      @OnOneInstance lease (the current leader or lease holder when there is one)
 *   stall              the worker's link to Redis stalls (nothing passes, nothing is dropped) for
 *                      1.5-4 s, past the leases and the outbox claim lease, then heals (every other
 *                      one on slot 0, whose worker passes the module an ioredis client of its own)
 *   redis-aof          Redis stopped (SIGTERM) and started again with its append-only file
 *   redis-empty        Redis killed (SIGKILL), its files deleted, started again empty
 *   lost-reply         the reply of one of a worker's next scripts is dropped after Redis ran it (the
 *                      client re-sends it)
 * removeRepeat() racing ticks is the workers' own doing; the summary counts the removals that raced one.
 */
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { NestFactory } from '@nestjs/core';
import { Client } from 'pg';
import { DelayQueueService, RedisLockModule } from '../../../lib/index.js';
import { jobOutboxMigration } from '../../../lib/outbox/postgres/index.js';
import { startLocalPostgres, type LocalPostgres } from '../../../test/support/postgres.js';
import { FaultProxy } from '../../fault-proxy.js';
import { hasRedisServerBinary, startLocalRedisServer, type LocalRedisServer } from '../../../lib/testing/local-redis-server.js';
import { checkScheduledWork, describeSwViolations, lostWithRedisData } from './checker.js';
import { FIXED_SCHEDULES, JOB_TOPIC, LEASE_MS, ORDERS_TABLE, OUTBOX_TABLE, seededRandom, TICK_TOPIC, VISIBILITY_MS } from './constants.js';
import { HistoryReader, HistoryWriter, type SwEvent } from './history-file.js';

export const SW_FAULT_KINDS = ['kill', 'kill-after-commit', 'pause', 'stall', 'redis-aof', 'redis-empty', 'lost-reply'] as const;
type FaultKind = (typeof SW_FAULT_KINDS)[number];

const ROOT = join(import.meta.dirname, '..', '..', '..');
const WORKER = join(import.meta.dirname, 'worker.ts');
const TYPESCRIPT_LOADER = join(ROOT, 'tools', 'typescript-loader', 'register.js');
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Options {
  processes: number;
  minutes: number;
  faults: FaultKind[];
  faultEveryMs: number;
  minFaults: number;
  seed: number;
  dir: string | undefined;
  json: boolean;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      processes: { type: 'string' },
      minutes: { type: 'string' },
      faults: { type: 'string' },
      'fault-every': { type: 'string' },
      'min-faults': { type: 'string' },
      seed: { type: 'string' },
      dir: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    const header = /\/\*\*([\s\S]*?)\*\//.exec(readFileSync(import.meta.filename, 'utf8'))?.[1] ?? '';
    process.stdout.write(`${header.replace(/^ \* ?/gm, '').trim()}\n`);
    process.exit(0);
  }
  const number = (name: string, raw: string | undefined, fallback: number, check: (n: number) => boolean): number => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!check(n)) throw new Error(`--${name} ${raw}: not a valid value`);
    return n;
  };
  const faults = (values.faults ?? SW_FAULT_KINDS.join(',')).split(',').filter(Boolean) as FaultKind[];
  for (const f of faults) if (!SW_FAULT_KINDS.includes(f)) throw new Error(`--faults: unknown fault ${f}; use ${SW_FAULT_KINDS.join(',')}`);
  return {
    processes: number('processes', values.processes, 3, (n) => Number.isInteger(n) && n >= 2 && n <= 16),
    minutes: number('minutes', values.minutes, 1, (n) => n > 0 && n <= 24 * 60),
    faults,
    faultEveryMs: number('fault-every', values['fault-every'], 2_500, (n) => n >= 100),
    minFaults: number('min-faults', values['min-faults'], 1, (n) => Number.isInteger(n) && n >= 0),
    seed: number('seed', values.seed, randomInt(2 ** 31), (n) => Number.isInteger(n) && n >= 0),
    dir: values.dir,
    json: values.json === true,
  };
}

interface OtherViolation {
  readonly kind: string;
  readonly [detail: string]: unknown;
}

class Worker {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  ready = false;
  idle = false;
  /** Killed on purpose (or armed to kill itself): its exit is not a crash. */
  expectedExit = false;
  private stderrTail = '';

  constructor(
    readonly slot: number,
    readonly incarnation: number,
    env: Record<string, string>,
    onViolation: (v: OtherViolation) => void,
  ) {
    this.child = spawn(process.execPath, ['--enable-source-maps', '--import', TYPESCRIPT_LOADER, WORKER], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      if (line === 'READY') {
        this.ready = true;
        // Signals asked for while it booted (before its handlers were installed the default action would kill it).
        for (const signal of this.deferred.splice(0)) this.signal(signal);
      } else if (line === 'IDLE') this.idle = true;
      else if (line.startsWith('VIOLATION ')) onViolation(JSON.parse(line.slice(10)) as OtherViolation);
      else process.stdout.write(`[${this.name}] ${line}\n`);
    });
    createInterface({ input: this.child.stderr! }).on('line', (line) => {
      this.stderrTail = `${this.stderrTail}\n${line}`.slice(-4_000);
      if (process.env.SW_VERBOSE) process.stderr.write(`[${this.name}] ${line}\n`);
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

  /** SIGUSR2 (stop producing) or SIGTERM (shut down): sent once the worker is ready, at once if it is. */
  request(signal: 'SIGUSR2' | 'SIGTERM'): void {
    if (this.ready) this.signal(signal);
    else this.deferred.push(signal);
  }

  private readonly deferred: NodeJS.Signals[] = [];
}

class ScheduledWorkRun {
  private readonly random: () => number;
  private readonly prefix = `sw-${randomInt(2 ** 31).toString(36)}`;
  private readonly dir: string;
  private readonly log: HistoryWriter;
  private readonly reader: HistoryReader;
  private readonly workers: Worker[] = [];
  private readonly proxies: FaultProxy[] = [];
  private readonly incarnations: number[] = [];
  private readonly other: OtherViolation[] = [];
  private readonly faultKinds = new Map<string, number>();
  private readonly faultDetails = new Map<string, number>();
  private round: FaultKind[] = [];
  private faultSequence = 0;
  private pauses = 0;
  private stalls = 0;
  private stopping = false;
  /** Workers were told to stop producing (respawned ones are told too). */
  private quiescing = false;
  private redis!: LocalRedisServer;
  private postgres!: LocalPostgres;
  private faultySeconds = 0;

  constructor(private readonly options: Options) {
    this.random = seededRandom(options.seed);
    this.dir = options.dir ?? mkdtempSync(join(tmpdir(), `sw-history-${options.seed}-`));
    this.log = new HistoryWriter(this.dir, 'driver');
    this.reader = new HistoryReader(this.dir);
  }

  async run(): Promise<boolean> {
    const o = this.options;
    if (!hasRedisServerBinary()) throw new Error('The checker needs redis-server on PATH (it restarts its own private server).');
    this.postgres = await startLocalPostgres();
    const pg = new Client({ connectionString: this.postgres.url });
    await pg.connect();
    await pg.query(`CREATE TABLE ${ORDERS_TABLE} (id text PRIMARY KEY)`);
    await pg.query(jobOutboxMigration(OUTBOX_TABLE));
    this.redis = await startLocalRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
    this.say(
      `scheduled-work checker: ${o.processes} workers x ${o.minutes} min, faults ${o.faults.join(',')} about every ${o.faultEveryMs} ms ` +
        `(at least ${o.minFaults} each), seed ${o.seed}; redis ${this.redis.url}, postgres ${this.postgres.url}; history in ${this.dir}`,
    );
    let monitor: Awaited<ReturnType<typeof NestFactory.createApplicationContext>> | undefined;
    try {
      for (let slot = 0; slot < o.processes; slot++) {
        this.proxies.push(await FaultProxy.start({ port: this.redis.port }));
        this.incarnations.push(0);
        this.spawn(slot);
      }
      await this.waitUntil(() => this.workers.every((w) => w.ready), 120_000, 'every worker to start');
      // Leave the workers a moment to upsert their schedules and elect a leader before the first fault.
      await this.waitUntil(() => this.seen((e) => e.op === 'leader-obs' && e.valid === true), 60_000, 'a leader');

      const started = performance.now();
      const end = started + o.minutes * 60_000;
      const latestEnd = end + o.minutes * 60_000;
      const enough = () => o.faults.every((kind) => (this.faultKinds.get(kind) ?? 0) >= o.minFaults);
      const faulty = () => performance.now() < end || (!enough() && performance.now() < latestEnd);
      let nextProgress = started + 30_000;
      while (faulty()) {
        await sleep(Math.max(0, Math.min((enough() ? end : latestEnd) - performance.now(), o.faultEveryMs * (0.5 + this.random()))));
        if (!faulty()) break;
        await this.inject(this.nextKind());
        if (performance.now() >= nextProgress) {
          nextProgress += 30_000;
          this.say(
            `  ${Math.round((performance.now() - started) / 1000)} s: ` +
              `faults ${JSON.stringify(Object.fromEntries(this.faultKinds))}, ` +
              `history ${(this.reader.read(), this.reader.events.length)} events`,
          );
        }
      }
      this.faultySeconds = Math.round((performance.now() - started) / 1000);
      this.say(`faulty phase over after ${this.faultySeconds} s: healing, stopping new work, letting the committed work run...`);
      for (const proxy of this.proxies) {
        proxy.disarmLostReplies();
        proxy.heal();
      }
      this.quiescing = true;
      for (const worker of this.workers) worker.request('SIGUSR2');
      await this.waitUntil(() => this.workers.every((w) => w.idle || !w.alive), 60_000, 'every worker to stop producing', false);
      const lastFaultT = Date.now();
      const settled = await this.waitUntil(
        async () => (await this.outboxLeft(pg)) === 0 && this.unrunCommitted().length === 0 && this.fixedTickedAfter(lastFaultT),
        60_000,
        'the outbox to drain, every committed job to run and every fixed schedule to tick again',
        false,
      );
      const outboxLeft = await this.outboxLeft(pg);
      const parked = (await pg.query(`SELECT id, topic, job_id, last_error FROM ${OUTBOX_TABLE} WHERE parked_at IS NOT NULL`)).rows;
      if (parked.length > 0) this.other.push({ kind: 'outbox-row-parked', rows: parked.slice(0, 5) });
      if (!settled) this.other.push({ kind: 'not-settled', outboxLeft, unrunCommitted: this.unrunCommitted().slice(0, 10) });
      this.stopping = true;
      await this.stopWorkers();

      monitor = await NestFactory.createApplicationContext(RedisLockModule.forRoot({ redis: this.redis.url, keyPrefix: this.prefix }), {
        logger: false,
      });
      const present = new Set((await monitor.get(DelayQueueService).listRepeats(TICK_TOPIC)).map((r) => r.id));
      this.log.record({ op: 'present-at-end', detail: [...present].sort().join(' ') });
      return this.summarize(present);
    } finally {
      this.stopping = true;
      for (const worker of this.workers) worker.signal('SIGKILL');
      await monitor?.close();
      await pg.end();
      for (const proxy of this.proxies) await proxy.stop();
      await this.redis.stop();
      await this.postgres.stop();
    }
  }

  private spawn(slot: number): void {
    const incarnation = ++this.incarnations[slot];
    const worker = new Worker(
      slot,
      incarnation,
      {
        SW_REDIS_URL: this.proxies[slot].url,
        SW_PG_URL: this.postgres.url,
        SW_PREFIX: this.prefix,
        SW_SLOT: String(slot),
        SW_INCARNATION: String(incarnation),
        SW_SEED: String(this.options.seed),
        SW_DIR: this.dir,
      },
      (violation) => {
        this.other.push(violation);
        this.say(`VIOLATION ${JSON.stringify(violation)}`);
      },
    );
    this.workers[slot] = worker;
    if (this.quiescing) worker.request('SIGUSR2');
    void worker.exited.then(({ code, signal }) => {
      if (this.stopping) return;
      if (!worker.expectedExit) {
        this.other.push({ kind: 'worker-crashed', worker: worker.name, code, signal, stderr: worker.lastErrors });
        this.say(`VIOLATION worker ${worker.name} exited on its own (${code ?? signal}):\n${worker.lastErrors}`);
      }
      this.spawn(slot);
    });
  }

  private nextKind(): FaultKind {
    if (this.round.length === 0) {
      this.round = [...this.options.faults];
      for (let i = this.round.length - 1; i > 0; i--) {
        const j = Math.floor(this.random() * (i + 1));
        [this.round[i], this.round[j]] = [this.round[j], this.round[i]];
      }
    }
    return this.round.shift()!;
  }

  private fault(kind: FaultKind, slot: number | undefined, detail: string): () => void {
    const n = this.faultSequence++;
    this.log.record({ op: 'fault', kind, phase: 'start', slot, n, detail });
    return () => {
      this.log.record({ op: 'fault', kind, phase: 'end', slot, n, detail });
      this.faultKinds.set(kind, (this.faultKinds.get(kind) ?? 0) + 1);
      this.faultDetails.set(detail, (this.faultDetails.get(detail) ?? 0) + 1);
    };
  }

  private pick(preferred?: number): Worker | undefined {
    const ready = this.workers.filter((w) => w.ready && w.alive);
    const chosen = ready.find((w) => w.slot === preferred);
    return chosen ?? (ready.length === 0 ? undefined : ready[Math.floor(this.random() * ready.length)]);
  }

  /** The slot whose latest observation of `op` was valid (the current leader, or @OnOneInstance holder). */
  private holderSlot(op: 'leader-obs' | 'one-obs'): number | undefined {
    this.reader.read();
    for (let i = this.reader.events.length - 1; i >= 0; i--) {
      const e = this.reader.events[i];
      if (e.op === op && e.valid) return Number(/^w(\d+)\./.exec(e.w)?.[1]);
    }
    return undefined;
  }

  private async inject(kind: FaultKind): Promise<void> {
    const between = (min: number, max: number) => Math.round(min + this.random() * (max - min));
    switch (kind) {
      case 'kill': {
        const victim = this.pick();
        if (!victim) return;
        const done = this.fault(kind, victim.slot, 'kill -9 worker');
        victim.expectedExit = true;
        victim.signal('SIGKILL');
        await victim.exited;
        done();
        return;
      }
      case 'kill-after-commit': {
        const victim = this.pick();
        if (!victim) return;
        const done = this.fault(kind, victim.slot, 'worker SIGKILLed right after a COMMIT');
        victim.expectedExit = true;
        victim.signal('SIGUSR1');
        const exit = await Promise.race([victim.exited, sleep(10_000).then(() => undefined)]);
        if (exit === undefined) {
          // No transaction committed in time (Redis or the database busy): kill it anyway, count it as a kill.
          victim.signal('SIGKILL');
          await victim.exited;
          this.fault('kill', victim.slot, 'kill -9 worker (armed kill after commit did not fire)')();
          return;
        }
        done();
        return;
      }
      case 'pause': {
        // Alternately the leader and the @OnOneInstance holder, so the pause outlasts a lease that is in use.
        const victim = this.pick(this.holderSlot(this.pauses++ % 2 === 0 ? 'leader-obs' : 'one-obs'));
        if (!victim) return;
        const ms = between(LEASE_MS + 500, LEASE_MS + 2_000);
        const done = this.fault(kind, victim.slot, 'SIGSTOP past the lease, then SIGCONT');
        victim.signal('SIGSTOP');
        await sleep(ms);
        victim.signal('SIGCONT');
        done();
        return;
      }
      case 'stall': {
        // Every other stall hits slot 0, whose worker uses a client of its own (no socket timeout):
        // its connections stay open through the stall and deliver the held commands when it heals.
        const candidates = this.proxies.map((p, slot) => ({ p, slot })).filter(({ p }) => p.pendingLostReplies === 0);
        if (candidates.length === 0) return;
        const { p, slot } =
          (this.stalls++ % 2 === 0 && candidates.find((c) => c.slot === 0)) || candidates[Math.floor(this.random() * candidates.length)];
        const done = this.fault(kind, slot, 'link to Redis stalled, then healed');
        p.blackhole();
        await sleep(between(1_500, 4_000));
        p.heal();
        done();
        return;
      }
      case 'redis-aof': {
        const done = this.fault(kind, undefined, 'Redis restarted (SIGTERM) with its append-only file');
        await this.redis.restart({ signal: 'SIGTERM', downtimeMs: between(200, 1_500) });
        done();
        return;
      }
      case 'redis-empty': {
        const done = this.fault(kind, undefined, 'Redis killed and restarted empty');
        // Deleted once it has exited, before it starts again (during the downtime).
        this.redis.process.once('exit', () => {
          rmSync(join(this.redis.dir, 'appendonlydir'), { recursive: true, force: true });
          rmSync(join(this.redis.dir, 'dump.rdb'), { force: true });
        });
        await this.redis.restart({ signal: 'SIGKILL', downtimeMs: between(200, 1_000) });
        done();
        return;
      }
      case 'lost-reply': {
        const slot = Math.floor(this.random() * this.proxies.length);
        const proxy = this.proxies[slot];
        const isScript = (args: readonly string[]) => ['evalsha', 'eval'].includes(args[0]?.toLowerCase());
        // Recorded when it hits (an armed fault that never hits is no fault).
        const lost = proxy.loseReply(isScript, between(1, 4)).then(() => this.fault(kind, slot, 'lost reply of a script')());
        await Promise.race([lost, sleep(5_000)]);
        return;
      }
    }
  }

  private seen(predicate: (e: SwEvent) => boolean): boolean {
    this.reader.read();
    return this.reader.events.some(predicate);
  }

  private async outboxLeft(pg: Client): Promise<number> {
    return Number((await pg.query(`SELECT count(*) AS n FROM ${OUTBOX_TABLE} WHERE parked_at IS NULL`)).rows[0].n);
  }

  /** Committed jobs not run yet, but for those Redis may have lost with its data (the checker's rule). */
  private unrunCommitted(): string[] {
    this.reader.read();
    const ran = new Set<string>();
    const committed: SwEvent[] = [];
    const begun = new Map<string, number>();
    const starts = new Map<number, number>();
    const emptyRestarts: Array<{ startM: number; endM: number }> = [];
    for (const e of this.reader.events) {
      if (e.op === 'run' && e.topic === JOB_TOPIC) ran.add(e.job!);
      else if (e.op === 'tx-begin') begun.set(e.job!, e.m);
      else if (e.op === 'committed') committed.push(e);
      else if (e.op === 'fault' && e.kind === 'redis-empty') {
        if (e.phase === 'start') starts.set(e.n!, e.m);
        else emptyRestarts.push({ startM: starts.get(e.n!) ?? e.m, endM: e.m });
      }
    }
    return committed.filter((c) => !ran.has(c.job!) && !lostWithRedisData(begun.get(c.job!) ?? c.m, c.m, emptyRestarts)).map((c) => c.job!);
  }

  private fixedTickedAfter(t: number): boolean {
    this.reader.read();
    const after = new Set<string>();
    for (const e of this.reader.events) {
      if (e.op !== 'run' || e.topic !== TICK_TOPIC) continue;
      const match = /^repeat:(.+)@(\d+)$/.exec(e.job!);
      if (match && Number(match[2]) > t) after.add(match[1]);
    }
    return FIXED_SCHEDULES.every(({ id }) => after.has(id));
  }

  private async stopWorkers(): Promise<void> {
    await Promise.all(
      this.workers.map(async (worker) => {
        worker.request('SIGTERM');
        const timer = setTimeout(() => {
          this.other.push({ kind: 'slow-shutdown', worker: worker.name, detail: 'still running 30 s after SIGTERM' });
          worker.signal('SIGKILL');
        }, 30_000);
        const { code, signal } = await worker.exited;
        clearTimeout(timer);
        if (code !== 0 && signal !== 'SIGKILL')
          this.other.push({ kind: 'unclean-shutdown', worker: worker.name, code, signal, stderr: worker.lastErrors });
      }),
    );
  }

  private summarize(present: ReadonlySet<string>): boolean {
    this.reader.read();
    const check = checkScheduledWork(this.reader.events, { visibilityMs: VISIBILITY_MS, leaseMs: LEASE_MS, presentAtEnd: present });
    const o = this.options;
    const faultsByKind = Object.fromEntries(o.faults.map((kind) => [kind, this.faultKinds.get(kind) ?? 0]));
    for (const [kind, count] of Object.entries(faultsByKind)) {
      if (count < o.minFaults) this.other.push({ kind: 'too-few-faults', fault: kind, count, required: o.minFaults });
    }
    const f = check.figures;
    const minimums: Record<string, number> = {
      'outbox jobs committed': f.jobs.committed,
      'outbox jobs rolled back': f.jobs.rolledBack,
      'jobs committed by a process SIGKILLed right after COMMIT': f.jobs.killedAfterCommit + f.churn.killedAfterCommit,
      'tick runs': f.ticks.runs,
      'removals through the outbox': f.churn.removalsViaOutbox,
      'removeRepeat() racing a tick': f.churn.removalsRacingTicks,
      '@OnOneInstance runs': f.oneInstance.runs,
      'leadership terms': f.leader.terms,
    };
    for (const [what, count] of Object.entries(minimums)) if (count < 1) this.other.push({ kind: 'vacuous', what, count });
    const byRule: Record<string, number> = {};
    for (const v of check.violations) byRule[v.rule] = (byRule[v.rule] ?? 0) + 1;
    for (const v of this.other) byRule[v.kind] = (byRule[v.kind] ?? 0) + 1;
    const violationCount = check.violations.length + this.other.length;
    const summary = {
      seed: o.seed,
      processes: o.processes,
      minutes: o.minutes,
      faultySeconds: this.faultySeconds,
      historyDir: this.dir,
      historyEvents: f.events,
      faultsByKind,
      faults: Object.fromEntries(this.faultDetails),
      jobs: f.jobs,
      ticks: { ...f.ticks, presentAtEnd: [...present].sort() },
      churn: f.churn,
      oneInstance: f.oneInstance,
      leader: f.leader,
      violations: byRule,
      violationCount,
      result: violationCount === 0 ? 'PASS' : 'FAIL',
    };
    this.say(
      [
        '',
        `history      ${f.events} events in ${this.dir}`,
        `faults       ${Object.entries(faultsByKind)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
        `outbox jobs  ${Object.entries(f.jobs)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
        `ticks        runs ${f.ticks.runs}, ticks ${f.ticks.ticks}, redeliveries ${f.ticks.redeliveries}, ` +
          `staleDeliveriesRun ${f.ticks.staleDeliveriesRun}; by schedule ${JSON.stringify(f.ticks.bySchedule)}`,
        `schedules    ${Object.entries(f.churn)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}; in Redis at the end ${[...present].sort().join(' ')}`,
        `one-instance runs ${f.oneInstance.runs}, observations ${f.oneInstance.observations}, overlaps after ` +
          (`Redis lost the lease ${f.oneInstance.overlapsAfterDataLoss}, ticks run twice after a fault ` +
            `${f.oneInstance.ticksTwiceAfterFault}`),
        `leader       terms ${f.leader.terms}, observations ${f.leader.observations}, stale views ` +
          `refused ${f.leader.staleObservationsRefused}, terms lost within 100 ms ${f.leader.shortLeaseLostTerms}, ` +
          `overlaps after Redis lost the lock ${f.leader.overlapsAfterDataLoss}`,
        `violations   ${violationCount}${
          violationCount > 0
            ? ` (${Object.entries(byRule)
                .map(([k, v]) => `${k} ${v}`)
                .join(', ')})`
            : ''
        }`,
        ...(check.violations.length > 0 ? [describeSwViolations(check.violations)] : []),
        ...this.other.slice(0, 20).map((v) => `violation: ${JSON.stringify(v).slice(0, 2_000)}`),
        `seed         ${o.seed} (npm run ` +
          `soak:scheduled -- --seed ${o.seed} --processes ${o.processes} --minutes ${o.minutes} draws the same faults)`,
        `result       ${summary.result}`,
      ].join('\n'),
    );
    if (o.json) {
      const detail = check.violations.slice(0, 20).map((v) => ({ rule: v.rule, message: v.message, events: v.events }));
      process.stdout.write(
        `SW_SUMMARY ${JSON.stringify({ ...summary, violationsDetail: detail, otherViolations: this.other.slice(0, 20) })}\n`,
      );
    }
    return violationCount === 0;
  }

  private async waitUntil(predicate: () => boolean | Promise<boolean>, timeoutMs: number, what: string, required = true): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (!(await predicate())) {
      if (performance.now() > deadline) {
        if (required) throw new Error(`scheduled-work checker: timed out after ${timeoutMs} ms waiting for ${what}`);
        this.say(`gave up after ${timeoutMs} ms waiting for ${what}`);
        return false;
      }
      await sleep(250);
    }
    return true;
  }

  private say(line: string): void {
    process.stdout.write(`${line}\n`);
  }
}

async function main(): Promise<void> {
  const run = new ScheduledWorkRun(parseOptions(process.argv.slice(2)));
  process.exit((await run.run()) ? 0 : 1);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error)?.stack ?? error}\n`);
  process.exit(2);
});
