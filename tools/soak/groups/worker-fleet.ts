/**
 * The consumer processes of the group and rate-limit checkers (worker.ts), one per slot: started,
 * SIGKILLed and respawned on the spot, stopped gracefully at the end. It gathers their history
 * lines into deliveries (group-checker.ts) and remembers, per process, when it was sent SIGKILL: a
 * delivery with no end in a killed process was cut by the kill. A worker that exits without being
 * killed, or reports an unhandled rejection, is recorded in `problems`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { TYPESCRIPT_NODE_ARGS } from '../../../test/support/child-process.js';
import { monotonicUs } from '../scheduled-work/constants.js';
import type { GroupDelivery } from './group-checker.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const WORKER = join(import.meta.dirname, 'worker.ts');

interface StartLine {
  readonly job: string;
  readonly token: string;
  readonly group?: string;
  readonly attempt: number;
  readonly claimedAt: number;
  readonly m: number;
  readonly pid: number;
}

interface EndLine {
  readonly job: string;
  readonly token: string;
  readonly m: number;
  readonly outcome: 'ok' | 'failed' | 'lost';
}

class WorkerProcess {
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
    this.child = spawn(process.execPath, [...TYPESCRIPT_NODE_ARGS, WORKER], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
}

export class WorkerFleet {
  readonly starts: StartLine[] = [];
  readonly ends = new Map<string, EndLine>();
  /** pid -> monotonic µs at which SIGKILL was sent. */
  readonly killedAt = new Map<number, number>();
  readonly problems: string[] = [];
  private readonly workers: WorkerProcess[] = [];
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

  /** Whether `worker` has a handler running (a start without its end). */
  busy(worker: WorkerProcess): boolean {
    return this.starts.some((s) => s.pid === worker.pid && !this.ends.has(`${s.job}@${s.token}`));
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
      return { job: s.job, group: s.group, attempt: s.attempt, token: s.token, pid: s.pid, startM: s.m, endM: end?.m, outcome: end?.outcome, killedM };
    });
  }

  private spawn(slot: number): void {
    const worker = new WorkerProcess(this.envOf(slot), (line, from) => this.onLine(line, from));
    this.workers[slot] = worker;
    void worker.exited.then(({ code, signal }) => {
      if (this.stopping) return;
      if (!worker.expectedExit) this.problems.push(`worker ${worker.pid} exited on its own (${code ?? signal}):\n${worker.stderr}`);
      this.spawn(slot);
    });
  }

  private onLine(line: string, worker: WorkerProcess): void {
    if (line.startsWith('ready ')) worker.setReady();
    else if (line.startsWith('unhandled ')) this.problems.push(`worker ${worker.pid}: ${line}`);
    else if (line.startsWith('H ')) {
      const event = JSON.parse(line.slice(2)) as (StartLine & { e: 'start' }) | (EndLine & { e: 'end' });
      if (event.e === 'start') this.starts.push(event);
      else this.ends.set(`${event.job}@${event.token}`, event);
    }
  }
}
