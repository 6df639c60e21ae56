/**
 * The scheduled-work checker's history: one append-only file per process incarnation (a worker,
 * or the driver), one JSON event a line, each written with a synchronous `write(2)` before the
 * code goes on, so a line is in the kernel before the effect it announces (or right after the one
 * it reports) and survives a SIGKILL of its writer. Redis is not used: the faults restart it
 * empty. Every event carries
 * - `m`: CLOCK_MONOTONIC in µs, shared by every process of the machine and not stopped by SIGSTOP:
 *   the clock the leader and one-instance checks compare;
 * - `t`: the wall clock in epoch ms (the clock the Redis server's TIME and tick times are on; all
 *   processes run on this machine);
 * - `w`: the writer (`w<slot>.<incarnation>` or `driver`).
 */
import { closeSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { monotonicUs } from './constants.js';

export type SwOp =
  // Outbox producer
  | 'tx-begin' // before BEGIN: `job`, `intent` commit|rollback, `delay` (ms) of its job
  | 'committed' // COMMIT resolved (or, `killed: true`, seen committed by the hook that then SIGKILLs the process)
  | 'rolled-back' // ROLLBACK done: the job must never run
  | 'tx-failed' // the transaction failed otherwise: the job may or may not run
  // Consumers (outbox jobs and ticks)
  | 'run' // a handler run began: `job`, `attempt`, `token`, `topic`
  | 'run-end' // it returned
  // Schedule churn: `id`, `via` direct|tx
  | 'repeat-invoke'
  | 'repeat-done'
  | 'remove-invoke'
  | 'remove-done'
  | 'churn-failed'
  // Observations of user code: `token`, `valid` = held and signal not aborted, read after `m` was taken
  | 'one-obs'
  | 'leader-acquired'
  | 'leader-obs'
  | 'leader-lost'
  // Driver
  | 'fault' // `kind`, `phase` start|end, `slot`, `detail`
  | 'present-at-end'; // the schedule ids in Redis once the workers stopped (`detail`, space-separated)

export interface SwEvent {
  readonly m: number;
  readonly t: number;
  readonly w: string;
  readonly op: SwOp;
  readonly job?: string;
  readonly topic?: string;
  readonly attempt?: number;
  readonly token?: string;
  readonly intent?: 'commit' | 'rollback';
  readonly killed?: boolean;
  readonly id?: string;
  readonly via?: 'direct' | 'tx';
  readonly n?: number;
  readonly valid?: boolean;
  readonly reason?: string;
  readonly error?: string;
  readonly kind?: string;
  readonly phase?: 'start' | 'end';
  readonly slot?: number;
  readonly detail?: string;
  readonly every?: number;
  readonly delay?: number;
}

export type SwRecord = Omit<SwEvent, 'm' | 't' | 'w'>;

/** One process's history file. `record` returns once the line is written. */
export class HistoryWriter {
  private readonly fd: number;

  constructor(
    dir: string,
    readonly writer: string,
  ) {
    this.fd = openSync(join(dir, `${writer}.jsonl`), 'a');
  }

  /** Appends `event` stamped now; `m` may be given when it was read before the state the event reports. */
  record(event: SwRecord, m = monotonicUs()): void {
    writeSync(this.fd, `${JSON.stringify({ m, t: Date.now(), w: this.writer, ...event })}\n`);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Reads every history file of `dir`, incrementally: `read()` returns the events written since the last call. */
export class HistoryReader {
  private readonly offsets = new Map<string, number>();
  readonly events: SwEvent[] = [];

  constructor(private readonly dir: string) {}

  read(): SwEvent[] {
    const fresh: SwEvent[] = [];
    for (const file of readdirSync(this.dir)
      .filter((f) => f.endsWith('.jsonl'))
      .sort()) {
      const text = readFileSync(join(this.dir, file), 'utf8');
      const from = this.offsets.get(file) ?? 0;
      const end = text.lastIndexOf('\n') + 1; // a line still being written is read next time
      if (end <= from) continue;
      for (const line of text.slice(from, end).split('\n')) {
        if (line.trim() === '') continue;
        try {
          fresh.push(JSON.parse(line) as SwEvent);
        } catch {
          // A line torn by a SIGKILL mid-write: nothing after it in that file was written either.
        }
      }
      this.offsets.set(file, end);
    }
    this.events.push(...fresh);
    return fresh;
  }
}
