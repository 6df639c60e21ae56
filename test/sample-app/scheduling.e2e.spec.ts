import { leadershipViolations, ticksNotRunOnce } from '../../sample-app/demo/scheduling-claims.js';
import { runSchedulingScenario, type SchedulingObservation } from '../../sample-app/demo/scheduling-scenario.js';
import { uniquePrefix } from '../support/test-app.js';
import { startSampleInstancesOnPostgres, type SampleInstancesOnPostgres } from './support/sample-instances-on-postgres.js';

/*
 * The sample service's scheduled work (sample-app/src/reports) across three real instances
 * (processes) on one Redis and one PostgreSQL database: the repeatable stock snapshot runs
 * each tick once, one instance leads at a time, a SIGKILLed leader is replaced within its lease and a
 * stopped one hands over at once. The scenario is the demo's (sample-app/demo/scheduling-scenario.ts);
 * the claims count and order the shared records, they do not time ticks.
 */
const EVERY = 1_000;
const TTL = 4_000;

describe('sample app: scheduled work across three instances (e2e)', () => {
  let started: SampleInstancesOnPostgres | undefined;
  let seen: SchedulingObservation;

  beforeAll(async () => {
    // One database for the three, as in a deployment (and quicker to start than three embedded ones).
    started = await startSampleInstancesOnPostgres(['a', 'b', 'c'], {
      REDIS_KEY_PREFIX: uniquePrefix('sample-sched'),
      REPORTS_SNAPSHOT_EVERY_MS: String(EVERY),
      REPORTS_LEADER_TTL_MS: String(TTL),
      REPORTS_SWEEP_EVERY_MS: '300',
    });
    seen = await runSchedulingScenario(started.instances, { snapshotEveryMs: EVERY, leaderTtlMs: TTL, ticksPerPhase: 4 });
    console.log(
      `sample scheduling: ${seen.ticks.length} ticks, runs by instance ${JSON.stringify(countBy(seen.runs.map((r) => r.instance)))}; ` +
        `SIGKILL handover ${seen.killed.ms} ms (ttl ${TTL}), SIGTERM handover ${seen.stopped.ms} ms`,
    );
  }, 300_000);

  afterAll(() => started?.stop());

  it('runs every tick of the repeatable job exactly once across the instances, through a SIGKILL and a SIGTERM', () => {
    expect(seen.ticks.length).toBeGreaterThanOrEqual(12);
    expect(ticksNotRunOnce(seen.ticks)).toEqual([]);
    expect(seen.runs.filter((run) => run.attempt !== 1)).toEqual([]);
  });

  it('has one leader at a time, with growing fencing tokens, and only the leader sweeps', () => {
    expect(leadershipViolations(seen.terms, seen.sweeps, new Set([seen.killed.from]))).toEqual([]);
    expect(seen.leaderSamples.filter((leaders) => leaders.length !== 1)).toEqual([]);
    expect(seen.terms.filter((term) => term.event === 'acquired').map((term) => term.instance)).toEqual([
      seen.killed.from,
      seen.killed.to,
      seen.stopped.to,
    ]);
    expect(seen.sweeps.length).toBeGreaterThan(0);
  });

  it('replaces a SIGKILLed leader within its lease, with a greater fencing token', () => {
    expect(seen.killed.to).not.toBe(seen.killed.from);
    expect(BigInt(seen.killed.toToken)).toBeGreaterThan(BigInt(seen.killed.fromToken));
    expect(seen.killed.reason).toBeUndefined(); // it died without recording an end
    // The lease lapses at most ttl after the kill; slack for a loaded machine.
    expect(seen.killed.ms).toBeLessThan(TTL + 3_000);
  });

  it('hands leadership over at once when the leader is stopped (SIGTERM)', () => {
    expect(seen.stoppedExit).toEqual({ code: 0, signal: null });
    expect(seen.stopped.reason).toBe('LeadershipSteppedDownError');
    expect(BigInt(seen.stopped.toToken)).toBeGreaterThan(BigInt(seen.stopped.fromToken));
    // Stepped down, not lapsed: well before the lease would have run out.
    expect(seen.stopped.ms).toBeLessThan(TTL);
  });
});

function countBy(values: readonly string[]): Record<string, number> {
  return values.reduce<Record<string, number>>((counts, value) => ({ ...counts, [value]: (counts[value] ?? 0) + 1 }), {});
}
