/**
 * Scheduled work across three instances of the sample service: lets the repeatable job tick, kills
 * the leader (SIGKILL), then stops the next one (SIGTERM), and returns what the shared records show.
 * The demo prints and checks the result; test/sample-app/scheduling.e2e.spec.ts asserts on it.
 */
import type { LeadershipRecord, SnapshotRun, SweepRecord } from '../src/reports/report-log.js';
import { stopSampleInstance, type SampleInstance } from './sample-instances.js';
import { acquiredTerms, runsPerTick, type TickRuns } from './scheduling-claims.js';

export interface SchedulingSettings {
  readonly snapshotEveryMs: number;
  readonly leaderTtlMs: number;
  /** Ticks to let pass in each phase (all three up, after the kill, after the stop). */
  readonly ticksPerPhase: number;
  /** Prints progress (the demo); default silent. */
  readonly note?: (text: string) => void;
}

/** A leader change the scenario caused. */
export interface Handover {
  readonly from: string;
  readonly fromToken: string;
  readonly to: string;
  readonly toToken: string;
  /** From the signal to the new leader's first record (both clocks are this machine's). */
  readonly ms: number;
  /** Why the old term ended, when it recorded its end (a SIGKILLed leader records none). */
  readonly reason?: string;
}

export interface SchedulingObservation {
  /** Ticks from the first tick after all three were up to the last tick that ran. */
  readonly ticks: TickRuns[];
  readonly runs: SnapshotRun[];
  readonly terms: LeadershipRecord[];
  readonly sweeps: SweepRecord[];
  /** Per sample (taken while no handover was going on), the instances that said they lead. */
  readonly leaderSamples: string[][];
  readonly killed: Handover;
  readonly stopped: Handover;
  /** Exit of the instance stopped with SIGTERM. */
  readonly stoppedExit: { code: number | null; signal: NodeJS.Signals | null };
}

interface RunsResponse {
  runs: SnapshotRun[];
}
interface LeaderResponse {
  instance: string;
  leader: boolean;
  terms: LeadershipRecord[];
  sweeps: SweepRecord[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function poll<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * Runs the scenario on three started instances (same Redis and key prefix, the given settings).
 * Leaves the last instance running; the caller stops it.
 */
export async function runSchedulingScenario(
  instances: readonly SampleInstance[],
  settings: SchedulingSettings,
): Promise<SchedulingObservation> {
  const { snapshotEveryMs: every, leaderTtlMs: ttl, ticksPerPhase } = settings;
  const note = settings.note ?? (() => undefined);
  const alive = [...instances];
  const firstTick = (Math.floor(Date.now() / every) + 1) * every;
  const leaderSamples: string[][] = [];

  const runs = async () => (await alive[0].get<RunsResponse>('/reports/runs')).runs;
  const leaderView = () => alive[0].get<LeaderResponse>('/reports/leader');
  /** Waits until `count` more ticks have run (any instance), from the last tick that ran before. */
  const letTicksRun = async (count: number) => {
    const before = Math.max(firstTick - every, ...(await runs()).map((run) => run.tick));
    await poll(`${count} ticks of ${every} ms`, count * every + 30_000, async () =>
      (await runs()).some((run) => run.tick >= before + count * every) ? true : undefined,
    );
  };
  /** Asks every live instance whether it leads, a few times; keeps the answers. */
  const sampleLeaders = async () => {
    for (let i = 0; i < 3; i++) {
      const views = await Promise.all(alive.map((instance) => instance.get<LeaderResponse>('/reports/leader')));
      leaderSamples.push(views.filter((view) => view.leader).map((view) => view.instance));
      await sleep(every / 4);
    }
  };
  const currentTerm = async () => acquiredTerms((await leaderView()).terms).at(-1)!;
  const nextTermAfter = (token: string, timeoutMs: number) =>
    poll(`a term after token ${token}`, timeoutMs, async () =>
      acquiredTerms((await leaderView()).terms).find((term) => BigInt(term.fencingToken) > BigInt(token)),
    );
  /** Signals the leader half way between two ticks (not while it may be running one), returns the handover. */
  const replaceLeader = async (signal: NodeJS.Signals) => {
    const leader = await currentTerm();
    const victim = alive.find((instance) => instance.name === leader.instance)!;
    alive.splice(alive.indexOf(victim), 1);
    const lastRun = Math.max(...(await runs()).map((run) => run.tick));
    await poll('the next tick', every + 30_000, async () => ((await runs()).some((run) => run.tick > lastRun) ? true : undefined));
    await sleep(every * 0.4);
    const signalledAt = Date.now();
    const exiting = stopSampleInstance(victim, signal);
    note(`${signal} → ${victim.name}, the leader (fencing token ${leader.fencingToken})`);
    const next = await nextTermAfter(leader.fencingToken, ttl + 30_000);
    const exit = await exiting;
    const ended = (await leaderView()).terms.find((term) => term.event === 'lost' && term.fencingToken === leader.fencingToken);
    const handover: Handover = {
      from: victim.name,
      fromToken: leader.fencingToken,
      to: next.instance,
      toToken: next.fencingToken,
      ms: next.at - signalledAt,
      reason: ended?.reason,
    };
    note(`${next.instance} leads (fencing token ${next.fencingToken}) ${handover.ms} ms after the ${signal}`);
    return { handover, exit };
  };

  note(`three instances up (${instances.map((i) => i.name).join(', ')}); letting ${ticksPerPhase} ticks run`);
  await letTicksRun(ticksPerPhase);
  await sampleLeaders();
  const { handover: killed } = await replaceLeader('SIGKILL');
  await letTicksRun(ticksPerPhase);
  await sampleLeaders();
  const { handover: stopped, exit: stoppedExit } = await replaceLeader('SIGTERM');
  await letTicksRun(ticksPerPhase);
  await sampleLeaders();

  const allRuns = await runs();
  const { terms, sweeps } = await leaderView();
  const lastTick = Math.max(...allRuns.map((run) => run.tick));
  return {
    ticks: runsPerTick(allRuns, every, firstTick, lastTick),
    runs: allRuns,
    terms,
    sweeps,
    leaderSamples,
    killed,
    stopped,
    stoppedExit,
  };
}
