import { checkGroupHistory, type GroupDelivery, type ScheduledGroupJob } from '../../tools/soak/groups/group-checker.js';
import { checkRateLimit, checkRateLimitPerInstance, type RateClaim } from '../../tools/soak/groups/rate-limit-checker.js';

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
    expect(rules(three, [ran('a', 0, 50), ran('b', 10, 60), ran('c', 20, 80)], { groupConcurrency: 2 })).toEqual([
      'group-overlap',
      'group-order',
    ]);
  });

  it('(a) a killed delivery runs until the SIGKILL, not after: a redelivery before it is an overlap', () => {
    expect(rules([job('a', 0)], [cut('a', 0, 3_000), ran('a', 2_500, 2_600, { attempt: 2 })])).toEqual(['same-job-overlap']);
  });

  it('(a) excuses only a delivery told its visibility was lost overlapping its own redelivery', () => {
    const lost = ran('a', 0, 3_200, { outcome: 'lost' });
    const redelivery = ran('a', 3_100, 3_150, { attempt: 2 });
    const result = checkGroupHistory({
      scheduled: three,
      deliveries: [lost, redelivery, ran('b', 3_300, 3_310), ran('c', 3_320, 3_330)],
      dead: new Set(),
      groupConcurrency: 1,
      emptyRestarts: [],
    });
    expect(result.violations).toEqual([]);
    expect(result.figures.excusedOverlaps).toBe(1);
    // Not when the earlier one finished normally (a second run of a job nobody lost).
    expect(rules([job('a', 0)], [ran('a', 0, 3_200), redelivery])).toEqual(['same-job-overlap']);
    // Nor a lost delivery overlapping the next job of its group.
    expect(
      rules(three.slice(0, 2), [ran('a', 0, 3_200, { outcome: 'lost' }), ran('a', 3_100, 3_110, { attempt: 2 }), ran('b', 3_150, 3_160)]),
    ).toEqual(['group-overlap', 'group-order']);
  });

  it('(b) a later job claimed and started before an earlier one, or started before its retry', () => {
    expect(rules(three, [ran('b', 0, 10), ran('a', 20, 30), ran('c', 40, 50)])).toEqual(['group-order', 'group-order']);
    // claimed in order, but b ran (and ended) before a's handler began: b was claimed while a was out
    expect(rules(three, [ran('a', 20, 30, { token: '1' }), ran('b', 0, 10, { token: '2' }), ran('c', 40, 50)])).toEqual(['group-order']);
    // b failed, c started while b waited for its retry (no overlap on the clock: the order rule catches it)
    expect(
      rules(three, [ran('a', 0, 10), ran('b', 20, 30, { outcome: 'failed' }), ran('c', 40, 50), ran('b', 200, 210, { attempt: 2 })]),
    ).toEqual(['group-order']);
    // c started while b's killed delivery waited for its redelivery
    expect(rules(three, [ran('a', 0, 10), cut('b', 20, 30), ran('c', 40, 50), ran('b', 3_100, 3_110, { attempt: 2 })])).toEqual([
      'group-order',
    ]);
  });

  it('(b) with groupConcurrency 2, a third job waits for one of the two before it to complete for good', () => {
    const scheduled = [...three, job('d', 3)];
    expect(rules(scheduled, [ran('a', 0, 100), ran('b', 10, 20), ran('c', 30, 40), ran('d', 50, 60)], { groupConcurrency: 2 })).toEqual([]);
    // a waits for its retry (still out), b runs: c may not start
    expect(
      rules(
        scheduled,
        [ran('a', 0, 5, { outcome: 'failed' }), ran('b', 10, 20), ran('c', 15, 40), ran('a', 200, 210, { attempt: 2 }), ran('d', 220, 230)],
        {
          groupConcurrency: 2,
        },
      ),
    ).toEqual(['group-order']);
  });

  it('(b) with groupConcurrency 2, handlers of jobs claimed in order may begin in either order; claims may not', () => {
    const inOrder = [ran('a', 20, 50, { token: '100', pid: 1 }), ran('b', 10, 60, { token: '200', pid: 2 }), ran('c', 70, 80)];
    expect(rules(three, inOrder, { groupConcurrency: 2 })).toEqual([]);
    const claimedOutOfOrder = [ran('a', 20, 50, { token: '300', pid: 1 }), ran('b', 10, 60, { token: '200', pid: 2 }), ran('c', 70, 80)];
    expect(rules(three, claimedOutOfOrder, { groupConcurrency: 2 })).toEqual(['group-order']);
  });

  it(
    '(c) a job neither handled nor dead is lost; a job to succeed that went dead; unless Redis lost ' + 'its data after it was scheduled',
    () => {
      expect(rules(three, [ran('a', 0, 10), ran('b', 20, 30)])).toEqual(['job-lost']);
      expect(rules(three, [ran('a', 0, 10), ran('b', 20, 30, { outcome: 'failed' }), ran('c', 40, 50)], { dead: ['b'] })).toEqual([
        'dead-unexpectedly',
      ]);
      expect(rules([job('f', 0, { failsAlways: true })], [ran('f', 0, 10, { outcome: 'failed' })])).toEqual(['job-lost']);
      const restart = { startM: 15_000, endM: 16_000 };
      const result = checkGroupHistory({
        scheduled: three,
        deliveries: [ran('a', 0, 10)],
        dead: new Set(),
        groupConcurrency: 1,
        emptyRestarts: [restart],
      });
      expect(result.violations).toEqual([]);
      expect(result.figures.lostToDataLoss).toBe(2);
      // Scheduled after the restart: no excuse.
      expect(rules([job('late', 0, { at: 17 })], [], { emptyRestarts: [restart] })).toEqual(['job-lost']);
    },
  );

  it('flags a delivery of a job never scheduled, one in the wrong group, one that never ended', () => {
    expect(rules([job('a', 0)], [ran('a', 0, 10), ran('zz', 20, 30)])).toEqual(['phantom-delivery']);
    expect(rules([job('a', 0)], [ran('a', 0, 10, { group: undefined })])).toEqual(['wrong-group']);
    expect(rules([job('a', 0)], [ran('a', 0, 10, { endM: undefined })])).toEqual(['unended-delivery']);
  });
});

describe('rate-limit checker', () => {
  const claim = (job: string, claimedAtMs: number, extra: Partial<RateClaim> = {}): RateClaim => ({
    job,
    attempt: 1,
    claimedAtMs,
    pid: 1,
    startM: claimedAtMs * 1000,
    ...extra,
  });
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

describe('group checker: the consumer-faults rules', () => {
  /** A handler that reads its signal between steps: live until `liveUntil`, then (if given) reads the abort at `abortAt`. */
  const polled = (
    id: string,
    from: number,
    to: number,
    reads: { liveUntil?: number; abortAt?: number },
    extra: Partial<GroupDelivery> = {},
  ): GroupDelivery =>
    ran(id, from, to, {
      lastLiveM: reads.liveUntil === undefined ? undefined : reads.liveUntil * 1000,
      abortSeenM: reads.abortAt === undefined ? undefined : reads.abortAt * 1000,
      outcome: reads.abortAt === undefined ? 'ok' : 'lost',
      ...extra,
    });
  const check = (
    scheduled: ScheduledGroupJob[],
    deliveries: GroupDelivery[],
    options: Partial<Parameters<typeof checkGroupHistory>[0]> = {},
  ) => checkGroupHistory({ scheduled, deliveries, dead: new Set(), groupConcurrency: 1, emptyRestarts: [], ...options });

  it('acted-after-takeover: a stopped delivery must read its abort at its first read after it resumed', () => {
    // Stopped 100..3_100; its redelivery ran 2_100..2_200, then b 2_210..2_300.
    const redelivery = ran('a', 2_100, 2_200, { attempt: 2, token: '9000000' });
    const next = ran('b', 2_210, 2_300, { token: '9000001' });
    const good = polled('a', 0, 3_100, { liveUntil: 90, abortAt: 3_100 });
    const result = check(three.slice(0, 2), [good, redelivery, next]);
    expect(result.violations).toEqual([]);
    expect(result.figures.abortsRead).toBe(1);
    // It read its signal live after resuming (3_100 > 2_100): overlapping its redelivery and b.
    const stale = polled('a', 0, 3_160, { liveUntil: 3_120, abortAt: 3_160 });
    expect(check(three.slice(0, 2), [stale, redelivery, next]).violations.map((v) => v.rule)).toEqual([
      'group-overlap',
      'group-order',
      'acted-after-takeover',
    ]);
    // It never read the abort and finished normally after its redelivery started.
    const finished = polled('a', 0, 3_150, { liveUntil: 3_150 });
    expect(check([three[0]], [finished, redelivery]).violations.map((v) => v.rule)).toEqual(['acted-after-takeover']);
    // A buffered job that started (live) in the resumed process after its redelivery had started.
    const lateStart = polled('a', 3_100, 3_110, { liveUntil: 3_100, abortAt: 3_110 }, { token: '1' });
    expect(check([three[0]], [lateStart, redelivery]).violations.map((v) => v.rule)).toEqual(['acted-after-takeover']);
  });

  it('attempt-without-run: an attempt spent by a claim that never started, unless a consumer was killed or stopped', () => {
    const scheduled = [job('a', 0)];
    const skipped = [ran('a', 3_000, 3_010, { attempt: 2 })];
    expect(check(scheduled, skipped, { consumerFaults: [] }).violations.map((v) => v.rule)).toEqual(['attempt-without-run']);
    expect(check(scheduled, skipped, { consumerFaults: [{ startM: 500_000, endM: 2_000_000 }] }).violations).toEqual([]);
    // A fault before the job was scheduled excuses nothing; a failed first run is a run.
    expect(
      check([job('a', 0, { at: 10_000 })], [ran('a', 12_000, 12_010, { attempt: 2 })], {
        consumerFaults: [{ startM: 0, endM: 5_000_000 }],
      }).violations.map((v) => v.rule),
    ).toEqual(['attempt-without-run']);
    expect(
      check(scheduled, [ran('a', 0, 5, { outcome: 'failed' }), ran('a', 100, 110, { attempt: 2 })], { consumerFaults: [] }).violations,
    ).toEqual([]);
  });

  it('dead-visibility-timeout: a job buried for a visibility timeout with no consumer fault', () => {
    const reason = 'Visibility timeout passed without an acknowledgement on the last attempt (the consumer crashed, stalled or lost Redis)';
    const options = { dead: new Set(['a']), deadReasons: new Map([['a', reason]]), deadSeenM: new Map([['a', 30_000_000]]) };
    expect(check([job('a', 0)], [], { ...options, consumerFaults: [] }).violations.map((v) => v.rule)).toEqual([
      'dead-visibility-timeout',
      'dead-unexpectedly',
    ]);
    expect(
      check([job('a', 0)], [], { ...options, consumerFaults: [{ startM: 1_000_000, endM: 2_000_000 }] }).violations.map((v) => v.rule),
    ).toEqual(['dead-unexpectedly']);
    // A fault after it was seen dead excuses nothing.
    expect(
      check([job('a', 0)], [], { ...options, consumerFaults: [{ startM: 31_000_000, endM: 32_000_000 }] }).violations.map((v) => v.rule),
    ).toEqual(['dead-visibility-timeout', 'dead-unexpectedly']);
  });

  it('started-while-paused and claimed-while-paused', () => {
    const pause = { resolvedM: 1_000_000, resolvedWallMs: 50_000, resumeSentM: 3_000_000, resumeSentWallMs: 52_000 };
    const scheduled = [job('a', 0, { group: 'x' }), job('b', 0, { group: 'y' }), job('c', 0, { group: 'z' })];
    const buffered = ran('a', 1_200, 1_300, { group: 'x', claimedAtMs: 49_990 });
    const afterResume = [
      ran('b', 3_050, 3_060, { group: 'y', claimedAtMs: 52_010 }),
      ran('c', 3_100, 3_110, { group: 'z', claimedAtMs: 52_000 }),
    ];
    const result = check(scheduled, [buffered, ...afterResume], { pauses: [pause] });
    expect(result.violations).toEqual([]);
    expect([result.figures.startedAfterPause, result.figures.latestStartAfterPauseMs]).toEqual([1, 200]);
    const late = ran('b', 1_500, 1_510, { group: 'y', claimedAtMs: 49_999 });
    const claimedWhilePaused = ran('c', 2_000, 2_010, { group: 'z', claimedAtMs: 51_000 });
    expect(check(scheduled, [buffered, late, claimedWhilePaused], { pauses: [pause] }).violations.map((v) => v.rule)).toEqual([
      'started-while-paused',
      'started-while-paused',
      'claimed-while-paused',
    ]);
  });
});

describe('rate-limit checker: instances configured differently', () => {
  // Process 1: at most 3 per 1000 ms; process 2: at most 1 per 20 ms. Tokens in claim order.
  const limits = new Map([
    [1, { max: 3, duration: 1_000 }],
    [2, { max: 1, duration: 20 }],
  ]);
  let token = 0;
  const claim = (pid: number, claimedAtMs: number): RateClaim => ({
    job: `j${++token}`,
    attempt: 1,
    claimedAtMs,
    pid,
    startM: claimedAtMs * 1000,
    token: String(token),
  });
  const check = (claims: RateClaim[]) =>
    checkRateLimitPerInstance({
      claims,
      limitOf: (pid) => limits.get(pid)!,
      scheduled: new Map(claims.map((c) => [c.job, 0])),
      handled: new Set(claims.map((c) => c.job)),
      dead: new Set(),
      killsM: [],
    });

  it('judges each claim against its own instance’s limit, counting every instance’s claims before it', () => {
    // The short window lets process 2 claim every 20 ms; process 1 claims only while the last second holds fewer than 3.
    const ok = check([claim(2, 0), claim(2, 20), claim(1, 30), claim(2, 50), claim(1, 1_100), claim(2, 1_120)]);
    expect(ok.violations).toEqual([]);
    expect(ok.figures.limitReachedBy).toBe(2);
    // Process 1 claiming with 3 claims of any instance within its second already: over its own limit.
    const over = check([claim(2, 0), claim(2, 20), claim(2, 40), claim(1, 50)]);
    expect(over.violations.map((v) => v.rule)).toEqual(['rate-own-limit-exceeded']);
    // Two claims exactly duration apart (floored ms) may be in one window or not: not counted.
    expect(check([claim(2, 0), claim(2, 20)]).violations).toEqual([]);
    expect(check([claim(2, 0), claim(2, 19)]).violations.map((v) => v.rule)).toEqual(['rate-own-limit-exceeded']);
  });
});
