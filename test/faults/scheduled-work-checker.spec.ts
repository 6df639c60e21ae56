import { join } from 'node:path';
import { outputTail, runSummarized, type SummarizedRun } from '../support/child-process.js';

/**
 * A short seeded run of the scheduled-work checker (tools/soak/scheduled-work/driver.ts; the long
 * run is `npm run soak:scheduled`): three worker processes with the module, an outbox relay on a
 * shared PostgreSQL database, repeatable schedules (fixed ones, and ones created and removed while
 * their ticks run, directly and through the outbox), an `@OnOneInstance` method and a
 * `@LeaderElection` provider, while the driver kills workers (also right after a COMMIT), pauses
 * the leader or lease holder past its lease, stalls a worker's link to Redis and heals it, restarts
 * Redis with its AOF and empty, and loses script replies. The checker judges the whole history:
 * committed jobs run exactly once (rolled-back never), each tick once, a removal stays removed,
 * schedules come back after data loss, never two leaders or two @OnOneInstance runs at once as
 * their user code sees it. CHECKER_SEED=<n> replays a seed (the same faults and draws; the
 * interleaving still varies with timing).
 */
const ROOT = join(import.meta.dirname, '..', '..');
const SEED = Number(process.env.CHECKER_SEED ?? 20_261_126);
const ARGS = ['--processes', '3', '--minutes', '0.5', '--fault-every', '1200', '--min-faults', '1'];

interface SwSummary {
  seed: number;
  result: 'PASS' | 'FAIL';
  historyEvents: number;
  faultsByKind: Record<string, number>;
  jobs: { committed: number; killedAfterCommit: number; rolledBack: number; ran: number };
  ticks: { runs: number; presentAtEnd: string[] };
  churn: { removals: number; removalsViaOutbox: number; removalsRacingTicks: number; killedAfterCommit: number };
  oneInstance: { runs: number };
  leader: { terms: number; observations: number };
  violations: Record<string, number>;
  violationCount: number;
}

function runChecker(seed: number): Promise<SummarizedRun<SwSummary>> {
  return runSummarized(
    [
      '--import',
      join(ROOT, 'tools', 'typescript-loader', 'register.js'),
      join(ROOT, 'tools', 'soak', 'scheduled-work', 'driver.ts'),
      ...ARGS,
      '--seed',
      String(seed),
      '--json',
    ],
    'SW_SUMMARY',
  );
}

describe('scheduled-work checker (short seeded run)', () => {
  it(
    'finds no violation in the history of outbox jobs, repeatable schedules, @OnOneInstance and @LeaderElection ' +
      'under every kind of fault',
    async () => {
      const run = await runChecker(SEED);
      const { summary, code } = run;
      const report = () =>
        `scheduled-work checker, seed ${SEED} (replay: CHECKER_SEED=${SEED}, or npm run soak:scheduled -- --seed ` +
        `${SEED} ${ARGS.join(' ')})\n${outputTail(run, 'SW_SUMMARY', 120)}`;
      if (!summary || code !== 0 || summary.violationCount !== 0) throw new Error(report());

      expect(summary.seed).toBe(SEED);
      expect(summary.violations).toEqual({});
      expect(summary.result).toBe('PASS');
      // Not vacuous: every fault kind happened, and every kind of work was done under them.
      expect(Object.keys(summary.faultsByKind).sort()).toEqual([
        'kill',
        'kill-after-commit',
        'lost-reply',
        'pause',
        'redis-aof',
        'redis-empty',
        'stall',
      ]);
      for (const [kind, count] of Object.entries(summary.faultsByKind)) expect([kind, count >= 1]).toEqual([kind, true]);
      expect(summary.jobs.committed).toBeGreaterThan(0);
      expect(summary.jobs.rolledBack).toBeGreaterThan(0);
      expect(summary.jobs.killedAfterCommit + summary.churn.killedAfterCommit).toBeGreaterThan(0);
      expect(summary.ticks.runs).toBeGreaterThan(0);
      expect(summary.ticks.presentAtEnd).toEqual(expect.arrayContaining(['s0', 's1', 's2']));
      expect(summary.churn.removalsViaOutbox).toBeGreaterThan(0);
      expect(summary.churn.removalsRacingTicks).toBeGreaterThan(0);
      expect(summary.oneInstance.runs).toBeGreaterThan(0);
      expect(summary.leader.terms).toBeGreaterThan(1);
    },
    300_000,
  );
});
