import type { Redis } from 'ioredis';

/**
 * CPU spent on both sides of a measured stretch: this process (`process.cpuUsage`) and the Redis
 * server (`INFO cpu` for the whole server process, `INFO commandstats` for command execution alone).
 *
 * Wall-clock throughput on a shared 2-core machine moves with whatever else runs; CPU time per
 * operation hardly does, so these are the figures to compare across runs and machines' moods.
 * Redis figures are only the bench's own when the server is private (the default): with REDIS_URL
 * they include everyone else's traffic too.
 */
export interface Usage {
  /** User + system CPU of this process, µs (client libraries, Nest, the scenario's own loop). */
  readonly clientCpuMicros: number;
  /**
   * User + system CPU of the redis-server process, µs: command execution plus everything around it
   * (reading and parsing requests, writing replies, pub/sub fan-out, the server's own cron).
   */
  readonly redisCpuMicros: number;
  /**
   * `INFO commandstats` usec by command, µs. Commands run inside a script are counted under their own
   * name *and* inside the script's time: see `commandMicros` for a sum that counts them once.
   */
  readonly commandMicrosByName: Readonly<Record<string, number>>;
  /** `INFO commandstats` calls by command, including commands run inside scripts. */
  readonly callsByName: Readonly<Record<string, number>>;
}

/** Commands the meter itself sends: left out of every figure. */
const OWN_COMMANDS = new Set(['info']);
/** Commands whose time includes the commands they run (counted again under their own names). */
export const SCRIPT_COMMANDS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro']);

interface Snapshot {
  readonly client: NodeJS.CpuUsage;
  readonly redisCpuMicros: number;
  readonly micros: Map<string, number>;
  readonly calls: Map<string, number>;
}

/** Reads the two sides' counters through one admin connection (one `INFO cpu commandstats` each). */
export class UsageMeter {
  constructor(private readonly admin: Redis) {}

  /** Runs `fn` between two snapshots; the INFO round trips lie outside `fn`'s own timing. */
  async measure<T>(fn: () => Promise<T>): Promise<{ result: T; usage: Usage }> {
    const before = await this.snapshot('start');
    const result = await fn();
    const after = await this.snapshot('end');
    return { result, usage: difference(before, after) };
  }

  /** Starts a measurement now; the returned function ends it. For stretches that are not one call. */
  async start(): Promise<() => Promise<Usage>> {
    const before = await this.snapshot('start');
    return async () => difference(before, await this.snapshot('end'));
  }

  /** The client's CPU is read after INFO at the start and before it at the end: INFO stays outside. */
  private async snapshot(edge: 'start' | 'end'): Promise<Snapshot> {
    const clientAtEnd = edge === 'end' ? process.cpuUsage() : undefined;
    const info = String(await this.admin.call('INFO', 'cpu', 'commandstats'));
    const client = clientAtEnd ?? process.cpuUsage();
    const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? Number.NaN);
    const micros = new Map<string, number>();
    const calls = new Map<string, number>();
    for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
      calls.set(match[1], Number(match[2]));
      micros.set(match[1], Number(match[3]));
    }
    return { client, redisCpuMicros: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6, micros, calls };
  }
}

function difference(before: Snapshot, after: Snapshot): Usage {
  const delta = (a: Map<string, number>, b: Map<string, number>) => {
    const out: Record<string, number> = {};
    for (const [name, value] of b) {
      if (OWN_COMMANDS.has(name)) continue;
      const d = value - (a.get(name) ?? 0);
      if (d > 0) out[name] = d;
    }
    return out;
  };
  return {
    clientCpuMicros: after.client.user - before.client.user + (after.client.system - before.client.system),
    redisCpuMicros: after.redisCpuMicros - before.redisCpuMicros,
    commandMicrosByName: delta(before.micros, after.micros),
    callsByName: delta(before.calls, after.calls),
  };
}

/** Adds usages up (several rounds of one contender). */
export function addUsage(usages: readonly Usage[]): Usage {
  const sumBy = (pick: (u: Usage) => Readonly<Record<string, number>>) => {
    const out: Record<string, number> = {};
    for (const u of usages) for (const [k, v] of Object.entries(pick(u))) out[k] = (out[k] ?? 0) + v;
    return out;
  };
  return {
    clientCpuMicros: usages.reduce((n, u) => n + u.clientCpuMicros, 0),
    redisCpuMicros: usages.reduce((n, u) => n + u.redisCpuMicros, 0),
    commandMicrosByName: sumBy((u) => u.commandMicrosByName),
    callsByName: sumBy((u) => u.callsByName),
  };
}

/**
 * Command execution time with every command counted once. A script's usec already contains the
 * commands it ran, which commandstats also counts under their own names; `clientShare(name)` says
 * which part of a command's calls came from clients rather than from scripts (from a MONITOR
 * profile), and only that part of its time is added. Scripts count whole.
 */
export function commandMicros(usage: Usage, clientShare: (name: string) => number): number {
  let total = 0;
  for (const [name, micros] of Object.entries(usage.commandMicrosByName)) {
    total += SCRIPT_COMMANDS.has(name) ? micros : micros * clientShare(name);
  }
  return total;
}

/** Calls of all commands, including those run inside scripts: the server's work in commands. */
export function totalCalls(usage: Usage): number {
  return Object.values(usage.callsByName).reduce((n, c) => n + c, 0);
}

/** CPU per job on both sides, µs, and the commands Redis ran per job (scripts' inner ones included). */
export interface CpuPerJob {
  /** This process, plus `otherClientMicros` when given (consumer processes of a fleet). */
  readonly clientMicros: number;
  readonly redisMicros: number;
  readonly redisCommands: number;
}

/** A measured stretch's usage over the `jobs` it handled; `otherClientMicros` is client CPU spent outside this process. */
export function cpuPerJob(usage: Usage, jobs: number, otherClientMicros = 0): CpuPerJob {
  return {
    clientMicros: (usage.clientCpuMicros + otherClientMicros) / jobs,
    redisMicros: usage.redisCpuMicros / jobs,
    redisCommands: totalCalls(usage) / jobs,
  };
}
