import { checkGroupHistory, type GroupDelivery, type ScheduledGroupJob } from '../../tools/soak/groups/group-checker.js';
import { checkRateLimit, type RateClaim } from '../../tools/soak/groups/rate-limit-checker.js';

/** Hand-made histories: times in ms here (µs in the history), tokens growing with the start. */
const job = (id: string, seq: number, options: { group?: string; at?: number; failsAlways?: boolean } = {}): ScheduledGroupJob => ({
  job: id,
  group: options.group ?? 'g',
  seq,
  scheduledM: (options.at ?? 0) * 1000,
  failsAlways: options.failsAlways ?? false,
});
const ran = (id: string, from: number, to: number, extra: Partial<GroupDelivery> = {}): GroupDelivery => ({
  job: id,
  group: 'g',
  attempt: 1,
  token: String(from * 1000 + 1),
  pid: 1,
  startM: from * 1000,
  endM: to * 1000,
  outcome: 'ok',
  ...extra,
});
/** A delivery cut by a SIGKILL of its process at `killedAt`. */
const cut = (id: string, from: number, killedAt: number, extra: Partial<GroupDelivery> = {}): GroupDelivery =>
  ran(id, from, 0, { endM: undefined, outcome: undefined, killedM: killedAt * 1000, ...extra });

const three = [job('a', 0), job('b', 1), job('c', 2)];
const rules = (
  scheduled: ScheduledGroupJob[],
  deliveries: GroupDelivery[],
  options: { dead?: string[]; groupConcurrency?: number; emptyRestarts?: Array<{ startM: number; endM: number }> } = {},
) =>
  checkGroupHistory({
    scheduled,
    deliveries,
    dead: new Set(options.dead ?? []),
    groupConcurrency: options.groupConcurrency ?? 1,
    emptyRestarts: options.emptyRestarts ?? [],
  }).violations.map((v) => v.rule);

describe('group checker', () => {
  it('finds nothing wrong in a history that keeps every rule: one at a time, in order, a kill, a retry, a dead job', () => {
    const scheduled = [...three, job('d', 3, { failsAlways: true }), job('e', 4), job('x', 0, { group: 'other' })];
    expect(
      rules(
        scheduled,
        [
          cut('a', 0, 30, { pid: 7 }),
          ran('a', 3_100, 3_120, { attempt: 2 }), // redelivered after the visibility timeout
          ran('b', 3_130, 3_150, { outcome: 'failed' }),
          ran('b', 3_300, 3_320, { attempt: 2 }), // its retry: c waited for it
          ran('c', 3_330, 3_340),
          ran('d', 3_350, 3_360, { outcome: 'failed' }),
          ran('d', 3_400, 3_410, { attempt: 2, outcome: 'failed' }), // dead: frees the group
          ran('e', 3_420, 3_430),
          ran('x', 10, 3_500, { group: 'other' }), // other groups run in parallel
        ],
        { dead: ['d'] },
      ),
    ).toEqual([]);
  });

  it('(a) two jobs of a group running at once', () => {
    expect(rules(three, [ran('a', 0, 50), ran('b', 40, 60), ran('c', 70, 80)])).toEqual(['group-overlap', 'group-order']);
  });

  it('(a) groupConcurrency 2 lets two run at once, not three', () => {
    const overlapping = [ran('a', 0, 50), ran('b', 10, 60), ran('c', 70, 80)];
    expect(rules(three, overlapping, { groupConcurrency: 2 })).toEqual([]);
    expect(rules(three, [ran('a', 0, 50), ran('b', 10, 60), ran('c', 20, 80)], { groupConcurrency: 2 })).toEqual(['group-overlap', 'group-order']);
  });

  it('(a) a killed delivery runs until the SIGKILL, not after: a redelivery before it is an overlap', () => {
    expect(rules([job('a', 0)], [cut('a', 0, 3_000), ran('a', 2_500, 2_600, { attempt: 2 })])).toEqual(['same-job-overlap']);
  });

  it('(a) excuses only a delivery told its visibility was lost overlapping its own redelivery', () => {
    const lost = ran('a', 0, 3_200, { outcome: 'lost' });
    const redelivery = ran('a', 3_100, 3_150, { attempt: 2 });
    const result = checkGroupHistory({ scheduled: three, deliveries: [lost, redelivery, ran('b', 3_300, 3_310), ran('c', 3_320, 3_330)], dead: new Set(), groupConcurrency: 1, emptyRestarts: [] });
    expect(result.violations).toEqual([]);
    expect(result.figures.excusedOverlaps).toBe(1);
    // Not when the earlier one finished normally (a second run of a job nobody lost).
    expect(rules([job('a', 0)], [ran('a', 0, 3_200), redelivery])).toEqual(['same-job-overlap']);
    // Nor a lost delivery overlapping the next job of its group.
    expect(rules(three.slice(0, 2), [ran('a', 0, 3_200, { outcome: 'lost' }), ran('a', 3_100, 3_110, { attempt: 2 }), ran('b', 3_150, 3_160)])).toEqual([
      'group-overlap',
      'group-order',
    ]);
  });

  it('(b) a later job claimed and started before an earlier one, or started before its retry', () => {
    expect(rules(three, [ran('b', 0, 10), ran('a', 20, 30), ran('c', 40, 50)])).toEqual(['group-order', 'group-order']);
    // claimed in order, but b ran (and ended) before a's handler began: b was claimed while a was out
    expect(rules(three, [ran('a', 20, 30, { token: '1' }), ran('b', 0, 10, { token: '2' }), ran('c', 40, 50)])).toEqual(['group-order']);
    // b failed, c started while b waited for its retry (no overlap on the clock: the order rule catches it)
    expect(rules(three, [ran('a', 0, 10), ran('b', 20, 30, { outcome: 'failed' }), ran('c', 40, 50), ran('b', 200, 210, { attempt: 2 })])).toEqual([
      'group-order',
    ]);
    // c started while b's killed delivery waited for its redelivery
    expect(rules(three, [ran('a', 0, 10), cut('b', 20, 30), ran('c', 40, 50), ran('b', 3_100, 3_110, { attempt: 2 })])).toEqual(['group-order']);
  });

  it('(b) with groupConcurrency 2, a third job waits for one of the two before it to complete for good', () => {
    const scheduled = [...three, job('d', 3)];
    expect(rules(scheduled, [ran('a', 0, 100), ran('b', 10, 20), ran('c', 30, 40), ran('d', 50, 60)], { groupConcurrency: 2 })).toEqual([]);
    // a waits for its retry (still out), b runs: c may not start
    expect(
      rules(scheduled, [ran('a', 0, 5, { outcome: 'failed' }), ran('b', 10, 20), ran('c', 15, 40), ran('a', 200, 210, { attempt: 2 }), ran('d', 220, 230)], {
        groupConcurrency: 2,
      }),
    ).toEqual(['group-order']);
  });

  it('(b) with groupConcurrency 2, handlers of jobs claimed in order may begin in either order; claims may not', () => {
    const inOrder = [ran('a', 20, 50, { token: '100', pid: 1 }), ran('b', 10, 60, { token: '200', pid: 2 }), ran('c', 70, 80)];
    expect(rules(three, inOrder, { groupConcurrency: 2 })).toEqual([]);
    const claimedOutOfOrder = [ran('a', 20, 50, { token: '300', pid: 1 }), ran('b', 10, 60, { token: '200', pid: 2 }), ran('c', 70, 80)];
    expect(rules(three, claimedOutOfOrder, { groupConcurrency: 2 })).toEqual(['group-order']);
  });

  it('(c) a job neither handled nor dead is lost; a job to succeed that went dead; unless Redis lost its data after it was scheduled', () => {
    expect(rules(three, [ran('a', 0, 10), ran('b', 20, 30)])).toEqual(['job-lost']);
    expect(rules(three, [ran('a', 0, 10), ran('b', 20, 30, { outcome: 'failed' }), ran('c', 40, 50)], { dead: ['b'] })).toEqual(['dead-unexpectedly']);
    expect(rules([job('f', 0, { failsAlways: true })], [ran('f', 0, 10, { outcome: 'failed' })])).toEqual(['job-lost']);
    const restart = { startM: 15_000, endM: 16_000 };
    const result = checkGroupHistory({ scheduled: three, deliveries: [ran('a', 0, 10)], dead: new Set(), groupConcurrency: 1, emptyRestarts: [restart] });
    expect(result.violations).toEqual([]);
    expect(result.figures.lostToDataLoss).toBe(2);
    // Scheduled after the restart: no excuse.
    expect(rules([job('late', 0, { at: 17 })], [], { emptyRestarts: [restart] })).toEqual(['job-lost']);
  });

  it('flags a delivery of a job never scheduled, one in the wrong group, one that never ended', () => {
    expect(rules([job('a', 0)], [ran('a', 0, 10), ran('zz', 20, 30)])).toEqual(['phantom-delivery']);
    expect(rules([job('a', 0)], [ran('a', 0, 10, { group: undefined })])).toEqual(['wrong-group']);
    expect(rules([job('a', 0)], [ran('a', 0, 10, { endM: undefined })])).toEqual(['unended-delivery']);
  });
});

describe('rate-limit checker', () => {
  const claim = (job: string, claimedAtMs: number, extra: Partial<RateClaim> = {}): RateClaim => ({ job, attempt: 1, claimedAtMs, pid: 1, startM: claimedAtMs * 1000, ...extra });
  const check = (claims: RateClaim[], options: { killsM?: number[]; dead?: string[]; handled?: string[] } = {}) => {
    const ids = [...new Set(claims.map((c) => c.job))];
    return checkRateLimit({
      max: 2,
      duration: 100,
      claims,
      scheduled: new Map(ids.map((id) => [id, 0])),
      handled: new Set(options.handled ?? ids),
      dead: new Set(options.dead ?? []),
      killsM: options.killsM ?? [],
    });
  };

  it('accepts max claims per window, a window being [t, t + duration)', () => {
    const result = check([claim('a', 0), claim('b', 99, { pid: 2 }), claim('c', 100), claim('d', 199, { pid: 3 })]);
    expect(result.violations).toEqual([]);
    expect(result.figures).toEqual({ claims: 4, fullestWindow: 2, processes: 3 });
  });

  it('flags a window holding more than max claims, a redelivery counted as a claim', () => {
    expect(check([claim('a', 0), claim('b', 50), claim('c', 99)]).violations.map((v) => v.rule)).toEqual(['rate-window-exceeded']);
    const redelivered = [claim('a', 0), claim('b', 10), claim('a', 60, { attempt: 2, startM: 60_000 })];
    expect(check(redelivered, { killsM: [5_000] }).violations.map((v) => v.rule)).toEqual(['rate-window-exceeded']);
  });

  it('flags a job not handled, one dead, and a later attempt no kill explains', () => {
    expect(check([claim('a', 0)], { handled: [] }).violations.map((v) => v.rule)).toEqual(['rate-job-not-handled']);
    expect(check([claim('a', 0)], { dead: ['a'] }).violations.map((v) => v.rule)).toEqual(['rate-job-dead']);
    const retried = [claim('a', 0), claim('a', 300, { attempt: 2, startM: 300_000 })];
    expect(check(retried).violations.map((v) => v.rule)).toEqual(['rate-retried-without-cause']);
    expect(check(retried, { killsM: [100_000] }).violations).toEqual([]);
  });
});
