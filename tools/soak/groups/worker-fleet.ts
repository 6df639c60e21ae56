/**
 * The consumer processes of the group and rate-limit checkers (worker.ts), one per slot: started,
 * SIGKILLed and respawned on the spot, stopped gracefully at the end. It gathers their history
 * lines into deliveries (group-checker.ts) and remembers, per process, when it was sent SIGKILL: a
 * delivery with no end in a killed process was cut by the kill. It also SIGSTOPs and SIGCONTs a
 * worker (`freeze`), recording the window. A worker that exits without being killed, or reports an
 * unhandled rejection, is recorded in `problems`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { TYPESCRIPT_NODE_ARGS } from '../../../test/support/child-process.js';
import { monotonicUs } from '../scheduled-work/constants.js';
import type { GroupDelivery } from './group-checker.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const WORKER = join(import.meta.dirname, 'worker.ts');

export interface StartLine {
  readonly job: string;
  readonly token: string;
  readonly group?: string;
  readonly attempt: number;
  readonly claimedAt: number;
  readonly m: number;
  readonly pid: number;
}

export interface EndLine {
  readonly job: string;
  readonly token: string;
  readonly m: number;
  readonly outcome: 'ok' | 'failed' | 'lost';
  readonly lastLiveM?: number;
  readonly abortSeenM?: number;
}

export class WorkerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  ready = false;
  /** Resolves once it is consuming (its SIGTERM handler is in place) or gone. */
  readonly started: Promise<void>;
  private markStarted!: () => void;
  /** Killed (or stopped) on purpose: its exit is not a crash. */
  expectedExit = false;
  stderr = '';

  constructor(env: Record<string, string>, onLine: (line: string, worker: WorkerProcess) => void) {
    this.child = spawn(process.execPath, [...TYPESCRIPT_NODE_ARGS, WORKER], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    this.started = new Promise((resolve) => (this.markStarted = resolve));
    void this.exited.then(() => this.markStarted());
    createInterface({ input: this.child.stdout! }).on('line', (line) => onLine(line, this));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr = `${this.stderr}${chunk.toString()}`.slice(-4_000)));
  }

  setReady(): void {
    this.ready = true;
    this.markStarted();
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The slot it was spawned in (its environment). */
  slot = -1;
}

export class WorkerFleet {
  readonly starts: StartLine[] = [];
  readonly ends = new Map<string, EndLine>();
  /** pid -> monotonic µs at which SIGKILL was sent. */
  readonly killedAt = new Map<number, number>();
  readonly problems: string[] = [];
  /** SIGSTOP-SIGCONT windows (monotonic µs, from the SIGSTOP to the SIGCONT), with the process. */
  readonly frozen: Array<{ pid: number; startM: number; endM: number }> = [];
  /** Jobs of a worker's burst topic (BURST_TOPIC) whose handler ran. */
  readonly burstRuns = new Set<string>();
  /** Called with every handler start, as its line arrives. */
  onStart?: (start: StartLine, worker: WorkerProcess) => void;
  /** Called with every handler end, as its line arrives. */
  onEnd?: (end: EndLine, worker: WorkerProcess) => void;
  private readonly workers: WorkerProcess[] = [];
  /** pid -> slot, of every process spawned. */
  private readonly slots = new Map<number, number>();
  private stopping = false;

  constructor(
    slots: number,
    private readonly envOf: (slot: number) => Record<string, string>,
  ) {
    for (let slot = 0; slot < slots; slot++) this.spawn(slot);
  }

  /** Workers started and consuming, not killed. */
  get live(): WorkerProcess[] {
    return this.workers.filter((w) => w.ready && w.alive && !w.expectedExit);
  }

  get allReady(): boolean {
    return this.workers.every((w) => w.ready);
  }

  /** The slot a process (alive or not) was spawned in. */
  slotOf(pid: number): number {
    const slot = this.slots.get(pid);
    if (slot === undefined) throw new Error(`no worker process ${pid}`);
    return slot;
  }

  /** The worker now in `slot`. */
  inSlot(slot: number): WorkerProcess {
    return this.workers[slot];
  }

  /** SIGSTOPs `worker` for `ms` (a fixed time on purpose: the fault), then SIGCONTs it; resolves after the SIGCONT. */
  async freeze(worker: WorkerProcess, ms: number): Promise<void> {
    const startM = monotonicUs();
    worker.child.kill('SIGSTOP');
    await new Promise((resolve) => setTimeout(resolve, ms));
    worker.child.kill('SIGCONT');
    this.frozen.push({ pid: worker.pid, startM, endM: monotonicUs() });
  }

  /** Whether `worker` has a handler running (a start without its end). */
  busy(worker: WorkerProcess): boolean {
    return this.starts.some((s) => s.pid === worker.pid && !this.ends.has(`${s.job}@${s.token}`));
  }

  /** Handlers of `worker` running right now (starts without their end). */
  runningIn(worker: WorkerProcess): number {
    return this.starts.filter((s) => s.pid === worker.pid && !this.ends.has(`${s.job}@${s.token}`)).length;
  }

  /** Handlers running right now, over every process that is not dead. */
  get running(): number {
    return this.starts.filter((s) => !this.ends.has(`${s.job}@${s.token}`) && !this.killedAt.has(s.pid)).length;
  }

  /** SIGKILLs `worker` and starts a new process in its slot. */
  kill(worker: WorkerProcess): void {
    worker.expectedExit = true;
    this.killedAt.set(worker.pid, monotonicUs());
    worker.child.kill('SIGKILL');
  }

  /** SIGTERM to every worker once it has started; each must exit 0 within 30 s (else it is killed and recorded as a problem). */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.workers.map(async (worker) => {
        // A respawned worker still booting would die of SIGTERM's default action.
        await worker.started;
        if (!worker.alive) return;
        worker.expectedExit = true;
        worker.child.kill('SIGTERM');
        const timer = setTimeout(() => worker.child.kill('SIGKILL'), 30_000);
        const { code, signal } = await worker.exited;
        clearTimeout(timer);
        if (code !== 0) this.problems.push(`worker ${worker.pid} ended with ${code ?? signal} on SIGTERM:\n${worker.stderr}`);
      }),
    );
  }

  /** Kills whatever still runs (a failed run's clean-up). */
  killAll(): void {
    this.stopping = true;
    for (const worker of this.workers) if (worker.alive) worker.child.kill('SIGKILL');
  }

  /** Every handler run so far, with its end or the kill that cut it. */
  deliveries(): GroupDelivery[] {
    return this.starts.map((s) => {
      const end = this.ends.get(`${s.job}@${s.token}`);
      const killedM = end ? undefined : this.killedAt.get(s.pid);
      return {
        job: s.job,
        group: s.group,
        attempt: s.attempt,
        token: s.token,
        pid: s.pid,
        claimedAtMs: s.claimedAt,
        startM: s.m,
        endM: end?.m,
        outcome: end?.outcome,
        killedM,
        lastLiveM: end?.lastLiveM,
        abortSeenM: end?.abortSeenM,
      };
    });
  }

  private spawn(slot: number): void {
    const worker = new WorkerProcess(this.envOf(slot), (line, from) => this.onLine(line, from));
    worker.slot = slot;
    this.slots.set(worker.pid, slot);
    this.workers[slot] = worker;
    void worker.exited.then(({ code, signal }) => {
      if (this.stopping) return;
      if (!worker.expectedExit) this.problems.push(`worker ${worker.pid} exited on its own (${code ?? signal}):\n${worker.stderr}`);
      this.spawn(slot);
    });
  }

  private onLine(line: string, worker: WorkerProcess): void {
    if (line.startsWith('B ')) this.burstRuns.add(line.slice(2));
    else if (line.startsWith('ready ')) worker.setReady();
    else if (line.startsWith('unhandled ')) this.problems.push(`worker ${worker.pid}: ${line}`);
    else if (line.startsWith('H ')) {
      const event = JSON.parse(line.slice(2)) as (StartLine & { e: 'start' }) | (EndLine & { e: 'end' });
      if (event.e === 'start') {
        this.starts.push(event);
        this.onStart?.(event, worker);
      } else {
        this.ends.set(`${event.job}@${event.token}`, event);
        this.onEnd?.(event, worker);
      }
    }
  }
}
