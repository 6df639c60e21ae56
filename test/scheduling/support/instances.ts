import type { Redis } from 'ioredis';
import { startFixtureInstances, stopInstances, type FixtureInstance } from '../../support/fixture-instances.js';
import { testRedisUrl } from '../../support/test-app.js';

export type InstanceMode = 'one-instance' | 'skip' | 'leader';

export type Instance = FixtureInstance;

/** Starts one test/fixtures/scheduling-instance.ts process per offset and waits until every one is ready. */
export async function startInstances(
  keyPrefix: string,
  mode: InstanceMode,
  offsetsMs: readonly number[],
  periodMs: number,
  ttlMs: number,
): Promise<Instance[]> {
  return startFixtureInstances('scheduling-instance.ts', offsetsMs.length, (name, i) => [
    testRedisUrl(),
    keyPrefix,
    name,
    mode,
    String(offsetsMs[i]),
    String(periodMs),
    String(ttlMs),
  ]);
}

/** SIGKILLs whatever is still running (for afterEach). */
export function killAll(instances: readonly Instance[]): Promise<void> {
  return stopInstances(instances, 'SIGKILL');
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

/**
 * What became of one call of `@OnOneInstance` on one instance: it ran; the instance held the lease
 * (confirmed in Redis) but a run held the run lock (`lock.timeout` of `<key>:run` during the call);
 * another instance held the lease; or the call failed.
 */
export type CallOutcome = 'ran' | 'run-lock-busy' | 'not-holder' | 'failed';

/** One call, recorded by test/fixtures/scheduling-instance.ts after it settled. */
export interface CallRecord {
  readonly tick: number;
  readonly name: string;
  /** `Date.now()` when the instance's timer fired the call (all instances share the host's clock). */
  readonly firedAt: number;
  readonly outcome: CallOutcome;
}

/** A fact an instance recorded (see test/fixtures/scheduling-instance.ts). */
export interface InstanceFact {
  readonly name: string;
  readonly at: number;
  readonly event: string;
  readonly nextTick?: number;
  readonly reason?: string;
  /** `stalled`: how late the instance's event loop ran (it was blocked until `at`). */
  readonly ms?: number;
}

export async function callsOf(redis: Redis, keyPrefix: string): Promise<CallRecord[]> {
  return (await redis.lrange(`${keyPrefix}:calls`, 0, -1)).map((line) => JSON.parse(line) as CallRecord);
}

export async function factsOf(redis: Redis, keyPrefix: string): Promise<InstanceFact[]> {
  return (await redis.lrange(`${keyPrefix}:facts`, 0, -1)).map((line) => JSON.parse(line) as InstanceFact);
}

/**
 * The ticks in [from, to] that did not run exactly once and that the recorded facts do not account
 * for, each with its run count and calls. A tick that ran twice is never accounted for. A tick that
 * ran nowhere is, only when:
 * - some instance's call of it held the lease but found the run lock held (a run was still going:
 *   the documented skip, e.g. two ticks fired back to back by a late event loop); or
 * - it fell in a clean handover: the leaving holder had stopped its timer before the tick
 *   (`ticker-stopped` with `nextTick` at or before it), and every call of the tick found the lease
 *   held by another instance and fired before the leaving holder's `one-instance.lost` (handed back);
 * - the holder was frozen through it: every other instance's call of the tick fired while the
 *   holder's event loop was blocked (its `stalled` fact) and found the lease held, and the holder's
 *   own call, fired when it woke, found it held by another, the holder having lost it meanwhile
 *   (`one-instance.lost` 'lease-lost' after the stall began: the stall outlasted the lease).
 */
export function unaccountedTicks(
  counts: ReadonlyMap<number, number>,
  calls: readonly CallRecord[],
  facts: readonly InstanceFact[],
  from: number,
  to: number,
): Array<{ tick: number; runs: number; calls: string[] }> {
  const wrong: Array<{ tick: number; runs: number; calls: string[] }> = [];
  for (let tick = from; tick <= to; tick++) {
    const runs = counts.get(tick) ?? 0;
    const ofTick = calls.filter((call) => call.tick === tick);
    if (
      runs === 1 ||
      (runs === 0 &&
        (ofTick.some((call) => call.outcome === 'run-lock-busy') || inHandover(tick, ofTick, facts) || holderFrozen(ofTick, facts)))
    )
      continue;
    wrong.push({ tick, runs, calls: ofTick.map((call) => `${call.name}@${call.firedAt}:${call.outcome}`) });
  }
  return wrong;
}

function holderFrozen(calls: readonly CallRecord[], facts: readonly InstanceFact[]): boolean {
  return facts.some((stall) => {
    if (stall.event !== 'stalled') return false;
    const from = stall.at - stall.ms! - 20; // its last on-time beat (every 20 ms)
    const holder = facts.filter((f) => f.event === 'one-instance.acquired' && f.at < from).at(-1);
    const lost = facts.some((f) => f.name === stall.name && f.event === 'one-instance.lost' && f.reason === 'lease-lost' && f.at >= from);
    const own = calls.filter((call) => call.name === stall.name);
    const others = calls.filter((call) => call.name !== stall.name);
    return (
      holder?.name === stall.name &&
      lost &&
      own.length > 0 &&
      own.every((call) => call.outcome === 'not-holder' && call.firedAt >= stall.at) &&
      others.length > 0 &&
      others.every((call) => call.outcome === 'not-holder' && call.firedAt >= from && call.firedAt <= stall.at)
    );
  });
}

function inHandover(tick: number, calls: readonly CallRecord[], facts: readonly InstanceFact[]): boolean {
  return facts.some((stopped) => {
    if (stopped.event !== 'ticker-stopped' || stopped.nextTick === undefined || stopped.nextTick > tick) return false;
    const handedBack = facts.find((f) => f.name === stopped.name && f.event === 'one-instance.lost' && f.reason === 'handed-back');
    return (
      handedBack !== undefined &&
      calls.length > 0 &&
      calls.every((call) => call.name !== stopped.name && call.outcome === 'not-holder' && call.firedAt <= handedBack.at)
    );
  });
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
