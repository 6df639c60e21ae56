import type { ChildProcess } from 'node:child_process';
import type { Redis } from 'ioredis';
import { spawnFixture } from '../../support/child-process.js';
import { testRedisUrl } from '../../support/test-app.js';
import { waitForLine } from '../../support/wait-for-output.js';

export type InstanceMode = 'one-instance' | 'skip' | 'leader';

export interface Instance {
  readonly name: string;
  readonly child: ChildProcess & { output: () => string };
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts one test/fixtures/scheduling-instance.ts process per offset and waits until every one is ready. */
export async function startInstances(
  keyPrefix: string,
  mode: InstanceMode,
  offsetsMs: readonly number[],
  periodMs: number,
  ttlMs: number,
): Promise<Instance[]> {
  const instances = offsetsMs.map((offset, i) => {
    const name = `i${i}`;
    const child = spawnFixture('scheduling-instance.ts', [testRedisUrl(), keyPrefix, name, mode, String(offset), String(periodMs), String(ttlMs)]);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    return { name, child, exited };
  });
  await Promise.all(instances.map((instance) => waitForLine(instance.child, new RegExp(`^ready ${instance.name}$`), 60_000)));
  return instances;
}

/** SIGKILLs whatever is still running (for afterEach). */
export async function killAll(instances: readonly Instance[]): Promise<void> {
  await Promise.all(
    instances.map(async (instance) => {
      if (instance.child.exitCode === null && instance.child.signalCode === null) instance.child.kill('SIGKILL');
      await instance.exited;
    }),
  );
}

export interface Run {
  readonly tick: number;
  readonly name: string;
  readonly fence: string;
}

/** Every run recorded by the instances, in the order Redis received them. */
export async function runsOf(redis: Redis, keyPrefix: string): Promise<Run[]> {
  const log = await redis.lrange(`${keyPrefix}:log`, 0, -1);
  return log.map((line) => {
    const [tick, name, fence] = line.split(':');
    return { tick: Number(tick), name, fence };
  });
}

/** Runs per tick. */
export function countByTick(runs: readonly Run[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const { tick } of runs) counts.set(tick, (counts.get(tick) ?? 0) + 1);
  return counts;
}

/** The ticks in [from, to] whose run count is not exactly one, with their counts. */
export function notExactlyOnce(counts: ReadonlyMap<number, number>, from: number, to: number): Array<[tick: number, runs: number]> {
  const wrong: Array<[number, number]> = [];
  for (let tick = from; tick <= to; tick++) {
    const runs = counts.get(tick) ?? 0;
    if (runs !== 1) wrong.push([tick, runs]);
  }
  return wrong;
}

/** The tick the instance with offset 0 is at now. */
export function tickNow(periodMs: number): number {
  return Math.floor(Date.now() / periodMs);
}

export interface LeadershipRecord {
  readonly name: string;
  readonly event: 'acquired' | 'lost' | 'killed';
  readonly token?: string;
  readonly reason?: string;
}

/**
 * Checks a recorded leadership history: no term begins while another is open (a leader's term is
 * open from its `acquired` to its `lost`, or to the spec's `killed` record once the process is
 * gone), fencing tokens grow from term to term, and only the leader reports a loss.
 *
 * @returns the problems found; empty when the history is a valid sequence of single-leader terms
 */
export function leadershipViolations(history: readonly LeadershipRecord[]): string[] {
  const problems: string[] = [];
  let leader: LeadershipRecord | undefined;
  let lastToken = -1n;
  history.forEach((record, i) => {
    if (record.event === 'acquired') {
      if (leader) problems.push(`#${i}: ${record.name} became leader while ${leader.name} still was`);
      const token = BigInt(record.token!);
      if (token <= lastToken) problems.push(`#${i}: fencing token ${token} did not grow (last ${lastToken})`);
      lastToken = token;
      leader = record;
    } else if (record.event === 'lost') {
      if (leader?.name !== record.name || leader.token !== record.token) problems.push(`#${i}: ${record.name} lost a term it did not hold`);
      leader = undefined;
    } else if (leader?.name === record.name) {
      leader = undefined;
    }
  });
  return problems;
}
