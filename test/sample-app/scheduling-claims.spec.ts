import type { LeadershipRecord, SnapshotRun, SweepRecord } from '../../sample-app/src/reports/report-log.js';
import { leadershipViolations, runsPerTick, ticksNotRunOnce } from '../../sample-app/demo/scheduling-claims.js';

/* The checker of the sample's scheduling claims (demo and e2e spec) finds what it must find. */

const run = (tick: number, instance: string): SnapshotRun => ({
  tick,
  jobId: `repeat:reports.stock-snapshot@${tick}`,
  instance,
  attempt: 1,
  ranAt: tick + 5,
  items: 0,
  units: 0,
});
const acquired = (instance: string, token: string): LeadershipRecord => ({ instance, event: 'acquired', fencingToken: token, at: 0 });
const lost = (instance: string, token: string): LeadershipRecord => ({
  instance,
  event: 'lost',
  fencingToken: token,
  at: 0,
  reason: 'LeadershipSteppedDownError',
});
const sweep = (instance: string, token: string): SweepRecord => ({ instance, fencingToken: token, at: 0, prunedSnapshots: 0 });

describe('sample scheduling claims checker', () => {
  it('counts every tick of the window, a missing one as 0 and a doubled one as 2', () => {
    const ticks = runsPerTick([run(1_000, 'a'), run(2_000, 'b'), run(2_000, 'c'), run(4_000, 'a')], 1_000, 1_000, 4_000);
    expect(ticks.map((t) => [t.tick, t.runs])).toEqual([
      [1_000, 1],
      [2_000, 2],
      [3_000, 0],
      [4_000, 1],
    ]);
    expect(ticksNotRunOnce(ticks).map((t) => t.tick)).toEqual([2_000, 3_000]);
  });

  it('accepts terms one after the other, a crashed leader replaced, and sweeps in token order', () => {
    const terms = [acquired('a', '10'), acquired('b', '20'), lost('b', '20'), acquired('c', '30')];
    const sweeps = [sweep('a', '10'), sweep('b', '20'), sweep('b', '20'), sweep('c', '30')];
    expect(leadershipViolations(terms, sweeps, new Set(['a']))).toEqual([]);
  });

  it('reports a second leader while the first has not ended its term and was not killed', () => {
    expect(leadershipViolations([acquired('a', '10'), acquired('b', '20')], [])).toEqual(['#1: b became leader while a still was']);
  });

  it('reports a fencing token that does not grow, and an end of a term not held', () => {
    expect(leadershipViolations([acquired('a', '20'), lost('a', '20'), acquired('b', '10'), lost('a', '20')], [])).toEqual([
      '#2: fencing token 10 did not grow (last 20)',
      '#3: a ended a term it did not hold (token 20)',
    ]);
  });

  it('reports a sweep by an old leader after a newer one swept, and a sweep outside any term', () => {
    const terms = [acquired('a', '10'), acquired('b', '20')];
    expect(leadershipViolations(terms, [sweep('b', '20'), sweep('a', '10'), sweep('c', '30')], new Set(['a']))).toEqual([
      'sweep #1: a swept with token 10 after a sweep with 20',
      'sweep #2: c swept with token 30, not of a term it began',
    ]);
  });
});
