/**
 * The demo's last part: three instances of the service on one Redis. On one shared database, they
 * first fulfil orders paid across them (fulfilment-demo.ts: an order's steps run in its job group).
 * Then they run the reports' scheduled work (sample-app/src/reports): the repeatable stock snapshot
 * must run each tick once across the three;
 * the `reports.leader` election must have one leader at a time, replaced within its lease when the
 * leader is SIGKILLed and at once when it is stopped with SIGTERM.
 */
import { join } from 'node:path';
import { check, note, step } from './demo-report.js';
import { demoFulfilmentAcrossInstances } from './fulfilment-demo.js';
import { startSampleInstance, stopSampleInstance, type SampleInstance } from './sample-instances.js';
import { leadershipViolations, ticksNotRunOnce } from './scheduling-claims.js';
import { runSchedulingScenario, type SchedulingObservation } from './scheduling-scenario.js';

const SNAPSHOT_EVERY_MS = 1_000;
const LEADER_TTL_MS = 3_000;
const NAMES = ['instance-1', 'instance-2', 'instance-3'];
/** How long each fulfilment step's work takes on the three instances. */
const FULFILMENT_STEP_MS = 300;

/**
 * `databaseUrl`: the database the three share, if any; without one each has its own embedded
 * database, and the orders part is skipped (an order's steps need the order's row on every instance).
 */
export async function demoThreeInstances(redisUrl: string, databaseUrl: string | undefined): Promise<void> {
  step(`Starting three instances of the service on one Redis${databaseUrl ? ' and one PostgreSQL database' : ''}`);
  const env: Record<string, string> = {
    REDIS_URL: redisUrl,
    FULFILMENT_STEP_MS: String(FULFILMENT_STEP_MS),
    // A key space of this run's own, so the records hold only this run's ticks and terms.
    REDIS_KEY_PREFIX: `demo-scheduling-${Date.now().toString(36)}`,
    REPORTS_SNAPSHOT_EVERY_MS: String(SNAPSHOT_EVERY_MS),
    REPORTS_LEADER_TTL_MS: String(LEADER_TTL_MS),
    REPORTS_SWEEP_EVERY_MS: '500',
  };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  const main = [join(import.meta.dirname, '..', 'src', 'main.js')];
  const instances: SampleInstance[] = [];
  const began = Date.now();
  try {
    // Each has its own embedded database, unless they share one: then the first creates the
    // schema before the others start.
    const startAll = async (names: string[]) => {
      const started = await Promise.allSettled(names.map((name) => startSampleInstance(main, name, env)));
      for (const result of started) if (result.status === 'fulfilled') instances.push(result.value);
      const failed = started.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    };
    if (databaseUrl) {
      await startAll(NAMES.slice(0, 1));
      await startAll(NAMES.slice(1));
    } else {
      await startAll(NAMES);
    }
    for (const instance of instances)
      note(`${instance.name} at ${instance.base} (GET /orders/:id/fulfilment, GET /reports/runs, GET /reports/leader)`);

    if (databaseUrl) await demoFulfilmentAcrossInstances(instances, FULFILMENT_STEP_MS);
    else
      note('skipping the orders across instances: no shared database (set DATABASE_URL, or install PostgreSQL for the demo to start one)');

    step(`Scheduled work on the three instances: a snapshot every ${SNAPSHOT_EVERY_MS} ms, a leader with a ${LEADER_TTL_MS} ms lease`);

    const seen = await runSchedulingScenario(instances, {
      snapshotEveryMs: SNAPSHOT_EVERY_MS,
      leaderTtlMs: LEADER_TTL_MS,
      ticksPerPhase: 4,
      note,
    });
    printTables(seen);
    reportClaims(seen);
    if (ticksNotRunOnce(seen.ticks).length > 0) printDiagnostics(seen, instances);
  } finally {
    await Promise.all(instances.map((instance) => stopSampleInstance(instance)));
    note(`three instances started, exercised and stopped in ${Math.round((Date.now() - began) / 1000)} s`);
  }
}

function reportClaims(seen: SchedulingObservation): void {
  // Runs of the ticks in the window (the instances ran earlier ticks too, before the scenario began).
  const inWindow = seen.ticks.flatMap((tick) => tick.instances);
  const perInstance = NAMES.map((name) => `${name} ${inWindow.filter((instance) => instance === name).length}`).join(', ');
  const notOnce = ticksNotRunOnce(seen.ticks);
  check(
    'every tick of the repeatable job ran exactly once across the three instances',
    notOnce.length === 0 && seen.ticks.length >= 10,
    notOnce.length === 0
      ? `${seen.ticks.length} ticks, ${inWindow.length} runs (${perInstance})`
      : `${notOnce.length} of ${seen.ticks.length} ticks did not: ${notOnce.map((t) => `${clock(t.tick)} ran ${t.runs}×`).join(', ')}`,
  );
  const violations = leadershipViolations(seen.terms, seen.sweeps, new Set([seen.killed.from]));
  const oneLeader = seen.leaderSamples.every((leaders) => leaders.length === 1);
  check(
    'one leader at a time',
    violations.length === 0 && oneLeader,
    violations.length > 0
      ? violations.join('; ')
      : oneLeader
        ? `${seen.terms.filter((t) => t.event === 'acquired').length} terms in token order, ${seen.sweeps.length} ` +
          `sweeps each by its term's leader, ` +
          `each of ${seen.leaderSamples.length} samples found exactly one instance leading`
        : `samples of who leads: ${JSON.stringify(seen.leaderSamples)}`,
  );
  const { killed, stopped } = seen;
  check(
    'a SIGKILLed leader was replaced once its lease ran out, with a greater fencing token',
    killed.to !== killed.from && BigInt(killed.toToken) > BigInt(killed.fromToken) && killed.ms <= LEADER_TTL_MS + 1_000,
    `${killed.to} led ${killed.ms} ms after ${killed.from} was killed (lease ${LEADER_TTL_MS} ms), token ` +
      `${killed.fromToken} → ${killed.toToken}`,
  );
  check(
    'a leader stopped with SIGTERM stepped down and handed over at once',
    stopped.reason === 'LeadershipSteppedDownError' && seen.stoppedExit.code === 0 && stopped.ms < LEADER_TTL_MS,
    `${stopped.from} ended its term (${stopped.reason ?? 'no end recorded'}), ${stopped.to} led ${stopped.ms} ms after the SIGTERM`,
  );
}

/** Who ran each tick, and the leadership terms. */
function printTables(seen: SchedulingObservation): void {
  const { killed, stopped } = seen;
  const killedAt = seen.terms.find((t) => t.event === 'acquired' && t.fencingToken === killed.toToken)!.at - killed.ms;
  const stoppedAt = seen.terms.find((t) => t.event === 'acquired' && t.fencingToken === stopped.toToken)!.at - stopped.ms;
  note('');
  note(`tick (UTC)     ${NAMES.map((name) => name.padEnd(11)).join(' ')}`);
  let killShown = false;
  let stopShown = false;
  for (const tick of seen.ticks) {
    if (!killShown && tick.tick > killedAt) {
      note(`               ── SIGKILL ${killed.from} (leader) ──`);
      killShown = true;
    }
    if (!stopShown && tick.tick > stoppedAt) {
      note(`               ── SIGTERM ${stopped.from} (leader) ──`);
      stopShown = true;
    }
    const cells = NAMES.map((name) => {
      const runs = tick.instances.filter((instance) => instance === name).length;
      return (runs === 0 ? '·' : runs === 1 ? 'ran' : `ran ${runs}×`).padEnd(11);
    });
    note(`${clock(tick.tick)}   ${cells.join(' ')}`);
  }
  note('');
  note('term  leader       fencing token      began         ended');
  const acquired = seen.terms.filter((t) => t.event === 'acquired');
  acquired.forEach((term, i) => {
    const end = seen.terms.find((t) => t.event === 'lost' && t.fencingToken === term.fencingToken);
    const ended = end ? `${clock(end.at)} (${end.reason})` : term.instance === killed.from ? 'SIGKILLed' : 'still leading';
    note(`${String(i + 1).padEnd(5)} ${term.instance.padEnd(12)} ${term.fencingToken.padEnd(18)} ${clock(term.at)}  ${ended}`);
  });
  note('');
}

/** What may explain a tick that did not run once: the instances' warnings, and the leader's sweeps (a gap is a stalled event loop). */
function printDiagnostics(seen: SchedulingObservation, instances: readonly SampleInstance[]): void {
  note('diagnostics:');
  let gap = { ms: 0, at: 0, instance: '' };
  seen.sweeps.forEach((sweep, i) => {
    const previous = seen.sweeps[i - 1];
    if (previous?.instance === sweep.instance && sweep.at - previous.at > gap.ms)
      gap = { ms: sweep.at - previous.at, at: previous.at, instance: sweep.instance };
  });
  note(`  longest gap between two sweeps of one leader (every 500 ms): ${gap.ms} ms on ${gap.instance} after ${clock(gap.at)}`);
  for (const instance of instances) {
    const lines = instance
      .output()
      .split('\n')
      .filter((line) => /WARN|ERROR|Error/.test(line));
    for (const line of lines.slice(-10)) note(`  ${instance.name}: ${line.trim()}`);
  }
}

/** HH:MM:SS.mmm of an epoch ms, UTC. */
function clock(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(11, 23);
}
