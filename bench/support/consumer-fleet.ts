import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { ConsumerSpec, FromConsumer, RunRecord, ToConsumer } from './consumer-protocol.js';

/** What the consumer processes of one run did between `go` and `stop`. */
export interface FleetResult {
  readonly records: RunRecord[];
  /** Handler runs per process. */
  readonly runsPerProcess: number[];
  /** User + system CPU of all consumer processes together, µs. */
  readonly cpuMicros: number;
  /** The contender's counters, summed over processes. */
  readonly counters: Record<string, number>;
}

/** `processes` consumer processes of one contender (bench/support/consumer-process.ts), on one Redis. */
export class ConsumerFleet {
  private readonly done: number[];
  private failure: Error | undefined;

  private constructor(private readonly children: ChildProcess[]) {
    this.done = children.map(() => 0);
  }

  /** Starts the processes; resolves once every one is connected and ready (not consuming yet). */
  static async start(spec: ConsumerSpec, processes: number): Promise<ConsumerFleet> {
    const root = join(import.meta.dirname, '..', '..');
    const children = Array.from({ length: processes }, () =>
      fork(join(import.meta.dirname, 'consumer-process.ts'), [JSON.stringify(spec)], {
        cwd: root,
        execArgv: ['--enable-source-maps', '--import', './tools/typescript-loader/register.js'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    const fleet = new ConsumerFleet(children);
    try {
      await Promise.all(children.map((child, i) => fleet.watch(child, i)));
    } catch (error) {
      fleet.kill();
      throw error;
    }
    return fleet;
  }

  /** Every process starts consuming. */
  go(): void {
    for (const child of this.children) child.send({ type: 'go' } satisfies ToConsumer);
  }

  /** Handler runs finished so far, all processes (reported every 20 ms); throws once a process failed. */
  finished(): number {
    if (this.failure) throw this.failure;
    return this.done.reduce((a, b) => a + b, 0);
  }

  /** Collects every process's records and CPU, then lets them close (killed if they take over 15 s). */
  async stop(): Promise<FleetResult> {
    const results = await Promise.all(
      this.children.map(
        (child) =>
          new Promise<Extract<FromConsumer, { type: 'result' }>>((resolve, reject) => {
            child.on('message', (message: FromConsumer) => {
              if (message.type === 'result') resolve(message);
              if (message.type === 'error') reject(new Error(message.message));
            });
            child.once('exit', (code) => reject(new Error(`a consumer process exited with ${code} before its result`)));
            child.send({ type: 'stop' } satisfies ToConsumer);
          }),
      ),
    );
    await Promise.all(this.children.map((child) => exited(child, 15_000)));
    const counters: Record<string, number> = {};
    for (const r of results) for (const [k, v] of Object.entries(r.counters)) counters[k] = (counters[k] ?? 0) + v;
    return {
      records: results.flatMap((r) => r.records),
      runsPerProcess: results.map((r) => r.records.length),
      cpuMicros: results.reduce((n, r) => n + r.cpuMicros, 0),
      counters,
    };
  }

  /** Ends every process still running (after a failure or a time-out). */
  kill(): void {
    for (const child of this.children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  private watch(child: ChildProcess, index: number): Promise<void> {
    return new Promise((resolve, reject) => {
      child.on('message', (message: FromConsumer) => {
        if (message.type === 'ready') resolve();
        if (message.type === 'progress') this.done[index] = message.done;
        if (message.type === 'error') {
          this.failure ??= new Error(`consumer process ${index}: ${message.message}`);
          reject(this.failure);
        }
      });
      child.on('exit', (code) => {
        if (code !== 0) this.failure ??= new Error(`consumer process ${index} exited with ${code}`);
        reject(this.failure ?? new Error(`consumer process ${index} exited before it was ready`));
      });
    });
  }
}

async function exited(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve();
    }, timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
