import { join } from 'node:path';
import { outputTail, runSummarized, type SummarizedRun } from '../support/child-process.js';

/**
 * A short seeded run of the randomized model-based checker (tools/soak/soak.ts; the long run is
 * `npm run soak`): three worker processes draw random lock operations of every kind and schedule
 * and handle jobs while the driver injects every kind of fault, then the history checker judges
 * the whole recorded history. CHECKER_SEED=<n> replays a seed (the same faults and operation
 * draws; the interleaving still varies with timing).
 */
const ROOT = join(import.meta.dirname, '..', '..');
const SEED = Number(process.env.CHECKER_SEED ?? 20_261_123);

interface SoakSummary {
  seed: number;
  result: 'PASS' | 'FAIL';
  faultySeconds: number;
  historyEvents: number;
  historyFile: string;
  operations: Record<string, { holds: number; acceptedWrites?: number; countedIn?: number }>;
  faults: Record<string, number>;
  faultsByKind: Record<string, number>;
  violations: Record<string, number>;
  violationCount: number;
  violationsDetail: unknown[];
  otherViolations: unknown[];
  jobs: { scheduled: number; handled: number; lost: number; dead: number; duplicates: number };
}

function runChecker(seed: number): Promise<SummarizedRun<SoakSummary>> {
  return runSummarized(
    [
      '--import',
      join(ROOT, 'tools', 'typescript-loader', 'register.js'),
      join(ROOT, 'tools', 'soak', 'soak.ts'),
      '--processes',
      '3',
      '--minutes',
      '0.5',
      '--fault-every',
      '600',
      '--min-faults',
      '1',
      '--seed',
      String(seed),
      '--json',
    ],
    'SOAK_SUMMARY',
  );
}

describe('randomized model-based checker (short seeded run)', () => {
  it('finds no violation in the history of random lock operations and jobs under every kind of fault', async () => {
    const run = await runChecker(SEED);
    const { summary, code } = run;
    const report = () =>
      `randomized checker, seed ${SEED} (replay: CHECKER_SEED=${SEED}, or npm run soak -- --seed ${SEED} --processes ` +
      `3 --minutes 0.5 --fault-every 600 --min-faults 1)\n${outputTail(run, 'SOAK_SUMMARY', 80)}`;
    if (!summary || code !== 0 || summary.violationCount !== 0) throw new Error(report());

    expect(summary.seed).toBe(SEED);
    expect(summary.violationCount).toBe(0);
    expect(summary.violations).toEqual({});
    expect(summary.result).toBe('PASS');

    // Not vacuous: every fault kind happened, a pause outlasted the lease, every kind of hold got through.
    for (const [kind, count] of Object.entries(summary.faultsByKind)) {
      expect([kind, count >= 1]).toEqual([kind, true]);
    }
    expect(Object.keys(summary.faultsByKind).sort()).toEqual(['blackhole', 'kill', 'lost-reply', 'pause', 'redis-restart', 'reset']);
    expect(summary.faults['pause worker (SIGSTOP) longer than the lease']).toBeGreaterThanOrEqual(1);
    for (const kind of ['plain', 'reentrant', 'fair', 'extend', 'multi', 'read', 'write', 'semaphore']) {
      expect([kind, summary.operations[kind].holds > 0]).toEqual([kind, true]);
    }
    for (const kind of ['plain', 'reentrant', 'fair', 'extend', 'multi', 'write']) {
      expect([kind, (summary.operations[kind].acceptedWrites ?? 0) > 0]).toEqual([kind, true]);
    }
    expect(summary.operations.semaphore.countedIn).toBeGreaterThan(0);
    expect(summary.jobs.scheduled).toBeGreaterThan(0);
    expect(summary.jobs.handled).toBe(summary.jobs.scheduled);
    expect(summary.jobs.lost).toBe(0);
    expect(summary.jobs.dead).toBe(0);
  }, 300_000);
});
