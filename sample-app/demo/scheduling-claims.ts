/**
 * The claims the demo and test/sample-app/scheduling.e2e.spec.ts check about the reports' scheduled
 * work, from the records every instance shares (GET /reports/runs, GET /reports/leader). Pure
 * functions: they count and order records, they never time anything.
 */
import type { LeadershipRecord, SnapshotRun, SweepRecord } from '../src/reports/report-log.js';

/** A tick of the repeatable job and the runs it got. */
export interface TickRuns {
  readonly tick: number;
  readonly runs: number;
  readonly instances: readonly string[];
}

/** Every tick of the `every` ms schedule from `from` to `to` (inclusive), with its runs (0 for none). */
export function runsPerTick(runs: readonly SnapshotRun[], everyMs: number, from: number, to: number): TickRuns[] {
  const byTick = new Map<number, string[]>();
  for (const run of runs) byTick.set(run.tick, [...(byTick.get(run.tick) ?? []), run.instance]);
  const ticks: TickRuns[] = [];
  for (let tick = Math.ceil(from / everyMs) * everyMs; tick <= to; tick += everyMs) {
    const instances = byTick.get(tick) ?? [];
    ticks.push({ tick, runs: instances.length, instances });
  }
  return ticks;
}

/** The ticks among `ticks` that did not run exactly once (missing, or run twice). */
export function ticksNotRunOnce(ticks: readonly TickRuns[]): TickRuns[] {
  return ticks.filter((tick) => tick.runs !== 1);
}

/**
 * What breaks "one leader at a time" in the records, in the order Redis received them:
 * - a term begins while another instance's term is open, unless that instance was killed
 *   (`crashed`: a SIGKILLed leader records no end; the next term must begin after its death);
 * - a term's fencing token does not grow;
 * - a term ends that was not open;
 * - a sweep comes from an instance that does not lead with that token, or carries an older token
 *   than a sweep before it (an old leader working after a newer one began).
 */
export function leadershipViolations(
  terms: readonly LeadershipRecord[],
  sweeps: readonly SweepRecord[],
  crashed: ReadonlySet<string> = new Set(),
): string[] {
  const problems: string[] = [];
  let open: LeadershipRecord | undefined;
  let lastToken = -1n;
  const termOfToken = new Map<string, string>();
  terms.forEach((record, i) => {
    if (record.event === 'acquired') {
      if (open && !crashed.has(open.instance)) problems.push(`#${i}: ${record.instance} became leader while ${open.instance} still was`);
      const token = BigInt(record.fencingToken);
      if (token <= lastToken) problems.push(`#${i}: fencing token ${token} did not grow (last ${lastToken})`);
      lastToken = token;
      open = record;
      termOfToken.set(record.fencingToken, record.instance);
    } else {
      if (open?.instance !== record.instance || open.fencingToken !== record.fencingToken) {
        problems.push(`#${i}: ${record.instance} ended a term it did not hold (token ${record.fencingToken})`);
      }
      open = undefined;
    }
  });
  let lastSweepToken = -1n;
  sweeps.forEach((sweep, i) => {
    if (termOfToken.get(sweep.fencingToken) !== sweep.instance) {
      problems.push(`sweep #${i}: ${sweep.instance} swept with token ${sweep.fencingToken}, not of a term it began`);
    }
    const token = BigInt(sweep.fencingToken);
    if (token < lastSweepToken)
      problems.push(`sweep #${i}: ${sweep.instance} swept with token ${token} after a sweep with ${lastSweepToken}`);
    if (token > lastSweepToken) lastSweepToken = token;
  });
  return problems;
}

/** The terms that began, in order. */
export function acquiredTerms(terms: readonly LeadershipRecord[]): LeadershipRecord[] {
  return terms.filter((record) => record.event === 'acquired');
}
