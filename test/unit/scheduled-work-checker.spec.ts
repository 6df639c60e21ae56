import { checkScheduledWork } from '../../tools/soak/scheduled-work/checker.js';
import type { SwEvent } from '../../tools/soak/scheduled-work/history-file.js';

/** A hand-made history: `m` in ms here (converted to µs), `t` = an epoch ms base + the same offset. */
const T0 = 1_800_000_000_000;
const at = (ms: number, w: string, event: Omit<SwEvent, 'm' | 't' | 'w'>): SwEvent => ({ m: ms * 1000, t: T0 + ms, w, ...event });
const fault = (from: number, to: number, kind: string, slot?: number): SwEvent[] => [
  at(from, 'driver', { op: 'fault', kind, slot, phase: 'start', n: from }),
  at(to, 'driver', { op: 'fault', kind, slot, phase: 'end', n: from }),
];
/** A handler run claimed `claimedBefore` ms before it began (its token is the Redis TIME in µs at the claim). */
const run = (ms: number, w: string, job: string, attempt = 1, topic = 'sw.jobs', claimedBefore = 2): SwEvent[] => {
  const token = String((T0 + ms - claimedBefore) * 1000);
  return [at(ms, w, { op: 'run', topic, job, attempt, token }), at(ms + 10, w, { op: 'run-end', topic, job, attempt, token })];
};
const committedJob = (ms: number, job: string, w = 'w0.1'): SwEvent[] => [
  at(ms, w, { op: 'tx-begin', job, intent: 'commit' }),
  at(ms + 5, w, { op: 'committed', job }),
];
/** The fixed schedules ticking after everything: so that `schedule-not-restored` stays quiet. */
const fixedTicks = (ms: number): SwEvent[] => ['s0', 's1', 's2'].flatMap((id) => run(ms, 'w1.1', `repeat:${id}@${T0 + ms}`, 1, 'sw.ticks'));
const present = new Set(['s0', 's1', 's2']);
const rules = (events: SwEvent[], presentAtEnd: ReadonlySet<string> = present) =>
  checkScheduledWork([...events, ...fixedTicks(100_000)], { visibilityMs: 2_000, leaseMs: 1_000, presentAtEnd }).violations.map(
    (v) => v.rule,
  );

describe('scheduled-work checker', () => {
  it('finds nothing wrong in a history that keeps every rule', () => {
    expect(
      rules([
        ...committedJob(0, 'a'),
        ...run(100, 'w1.1', 'a'),
        at(200, 'w0.1', { op: 'tx-begin', job: 'b', intent: 'rollback' }),
        at(210, 'w0.1', { op: 'rolled-back', job: 'b' }),
        // redelivered as a later attempt after its consumer was paused: allowed
        ...committedJob(300, 'c'),
        ...fault(390, 3_000, 'pause', 1),
        ...run(400, 'w1.1', 'c'),
        ...run(2_500, 'w2.1', 'c', 2),
        // leader terms one after the other, tokens growing
        at(1_000, 'w0.1', { op: 'leader-acquired', token: '10', valid: true }),
        at(1_050, 'w0.1', { op: 'leader-obs', token: '10', valid: true }),
        at(1_100, 'w0.1', { op: 'leader-obs', token: '10', valid: false }),
        at(1_200, 'w1.1', { op: 'leader-acquired', token: '11', valid: true }),
        at(1_250, 'w1.1', { op: 'leader-obs', token: '11', valid: true }),
        // a schedule removed for good
        at(5_000, 'w0.1', { op: 'repeat-invoke', id: 'c0.1.direct', via: 'direct' }),
        at(5_010, 'w0.1', { op: 'repeat-done', id: 'c0.1.direct', via: 'direct' }),
        ...run(5_250, 'w1.1', `repeat:c0.1.direct@${T0 + 5_250}`, 1, 'sw.ticks'),
        at(5_300, 'w0.1', { op: 'remove-invoke', id: 'c0.1.direct', via: 'direct' }),
        at(5_310, 'w0.1', { op: 'remove-done', id: 'c0.1.direct', via: 'direct' }),
      ]),
    ).toEqual([]);
  });

  it('outbox: a rolled-back job that ran, a committed one that never ran, a phantom, one run twice as the same attempt', () => {
    expect(
      rules([
        at(0, 'w0.1', { op: 'tx-begin', job: 'b', intent: 'rollback' }),
        at(10, 'w0.1', { op: 'rolled-back', job: 'b' }),
        ...run(20, 'w1.1', 'b'),
        ...committedJob(30, 'lost'),
        ...run(40, 'w1.1', 'phantom'),
        ...committedJob(50, 'twice'),
        ...run(60, 'w1.1', 'twice'),
        ...run(3_000, 'w2.1', 'twice'),
      ]).sort(),
    ).toEqual(['committed-not-run', 'job-ran-twice', 'phantom-run', 'rolled-back-ran']);
  });

  it('outbox: a later attempt is a violation when nothing kept the earlier run from being acknowledged', () => {
    expect(rules([...committedJob(0, 'a'), ...run(100, 'w1.1', 'a'), ...run(2_500, 'w2.1', 'a', 2)])).toEqual([
      'redelivered-without-cause',
    ]);
  });

  it(
    'outbox: a delivery whose handler began after its visibility had passed (paused or cut off before ' +
      'it began) excuses the next attempt',
    () => {
      // Attempt 1 claimed at 100, its consumer stopped before the handler began; attempt 2 ran at 2 200; attempt 1's handler began at 2
      // 500.
      expect(
        checkScheduledWork(
          [...committedJob(0, 'a'), ...run(2_200, 'w2.1', 'a', 2), ...run(2_500, 'w1.1', 'a', 1, 'sw.jobs', 2_400), ...fixedTicks(100_000)],
          {
            visibilityMs: 2_000,
            leaseMs: 1_000,
            presentAtEnd: present,
          },
        ),
      ).toMatchObject({ violations: [], figures: { jobs: { redeliveries: 1, staleDeliveriesRun: 1 } } });
    },
  );

  it('outbox: Redis restarted empty excuses a job lost or written twice, not a rolled-back one that ran', () => {
    expect(
      rules([
        ...committedJob(0, 'lost'),
        ...committedJob(10, 'again'),
        ...run(20, 'w1.1', 'again'),
        ...fault(1_000, 1_500, 'redis-empty'),
        ...run(2_000, 'w1.1', 'again'),
        at(30, 'w0.1', { op: 'tx-begin', job: 'b', intent: 'rollback' }),
        at(40, 'w0.1', { op: 'rolled-back', job: 'b' }),
        ...run(2_100, 'w1.1', 'b'),
      ]),
    ).toEqual(['rolled-back-ran']);
  });

  it('repeat: a tick run twice (even after data loss), a tick of a removed schedule, a removed schedule still stored, a lost one', () => {
    const tick = `repeat:s0@${T0 + 500}`;
    expect(
      rules(
        [
          ...run(500, 'w0.1', tick, 1, 'sw.ticks'),
          ...fault(600, 700, 'redis-empty'),
          ...run(800, 'w1.1', tick, 1, 'sw.ticks'),
          at(1_000, 'w0.1', { op: 'repeat-invoke', id: 'c0.1.direct', via: 'direct' }),
          at(1_010, 'w0.1', { op: 'repeat-done', id: 'c0.1.direct', via: 'direct' }),
          at(1_100, 'w0.1', { op: 'remove-invoke', id: 'c0.1.direct', via: 'direct' }),
          at(1_110, 'w0.1', { op: 'remove-done', id: 'c0.1.direct', via: 'direct' }),
          ...run(1_500, 'w1.1', `repeat:c0.1.direct@${T0 + 1_500}`, 1, 'sw.ticks'),
          at(2_000, 'w0.1', { op: 'repeat-invoke', id: 'c0.1.tx', via: 'tx' }),
          at(2_010, 'w0.1', { op: 'repeat-done', id: 'c0.1.tx', via: 'tx' }),
        ],
        new Set(['s0', 's1', 's2', 'c0.1.direct']),
      ).sort(),
    ).toEqual(['removed-schedule-present', 'removed-schedule-ticked', 'schedule-lost', 'tick-ran-twice']);
  });

  it(
    'repeat: a direct removal undone by a Redis data loss while an earlier transactional repeat() may ' +
      'be relayed again is counted (NG-r), not a violation; without the data loss it is one',
    () => {
      const history = (withDataLoss: boolean): SwEvent[] => [
        at(1_000, 'w0.1', { op: 'repeat-invoke', id: 'c0.1.tx', via: 'tx' }),
        at(1_010, 'w0.1', { op: 'repeat-done', id: 'c0.1.tx', via: 'tx' }),
        at(1_100, 'w0.2', { op: 'remove-invoke', id: 'c0.1.tx', via: 'direct' }),
        at(1_110, 'w0.2', { op: 'remove-done', id: 'c0.1.tx', via: 'direct' }),
        ...(withDataLoss ? fault(1_200, 1_300, 'redis-empty') : []),
        ...run(1_500, 'w1.1', `repeat:c0.1.tx@${T0 + 1_500}`, 1, 'sw.ticks'),
      ];
      const undone = checkScheduledWork([...history(true), ...fixedTicks(100_000)], {
        visibilityMs: 2_000,
        leaseMs: 1_000,
        presentAtEnd: present,
      });
      expect(undone.violations.filter((v) => v.rule === 'removed-schedule-ticked')).toEqual([]);
      expect(undone.figures.churn.removalsUndoneByDataLoss).toBe(1);
      expect(rules(history(false))).toContain('removed-schedule-ticked');
    },
  );

  it(
    'repeat: a removal undone because Redis lost its data while the remover was down (NG-rl) is counted, ' +
      'not a violation; with the remover up, or Redis losing nothing, it is one',
    () => {
      const history = (remover: 'killed' | 'up', dataLoss = true): SwEvent[] => [
        at(1_000, 'w0.1', { op: 'repeat-invoke', id: 'c0.1.tx', via: 'tx' }),
        at(1_010, 'w0.1', { op: 'repeat-done', id: 'c0.1.tx', via: 'tx' }),
        at(1_100, 'w0.1', { op: 'remove-invoke', id: 'c0.1.tx', via: 'tx' }),
        at(1_110, 'w0.1', { op: 'remove-done', id: 'c0.1.tx', via: 'tx' }),
        ...(remover === 'killed' ? fault(1_500, 1_600, 'kill', 0) : fault(1_500, 1_600, 'kill', 1)),
        ...(dataLoss ? fault(3_000, 3_500, 'redis-empty') : []),
        ...run(12_000, 'w1.1', `repeat:c0.1.tx@${T0 + 12_000}`, 1, 'sw.ticks'),
      ];
      const presentAtEnd = new Set([...present, 'c0.1.tx']);
      const undone = checkScheduledWork([...history('killed'), ...fixedTicks(100_000)], {
        visibilityMs: 2_000,
        leaseMs: 1_000,
        presentAtEnd,
      });
      expect(undone.violations.map((v) => v.rule)).toEqual([]);
      expect(undone.figures.churn.removalsUndoneByDataLoss).toBe(1);
      expect(rules(history('up'), presentAtEnd)).toEqual(['removed-schedule-present']);
      expect(rules(history('killed', false), presentAtEnd)).toEqual(['removed-schedule-present']);
    },
  );

  it('repeat: a fixed schedule missing at the end, or not ticking after the last fault, was not restored', () => {
    const events = [...fault(200_000, 201_000, 'redis-empty')];
    expect(rules(events, new Set(['s0', 's1']))).toEqual(['schedule-not-restored', 'schedule-not-restored', 'schedule-not-restored']);
  });

  it('leadership and @OnOneInstance: a term still seen valid after the next began, a token that went back', () => {
    expect(
      rules([
        at(1_000, 'w0.1', { op: 'leader-acquired', token: '10', valid: true }),
        at(1_200, 'w1.1', { op: 'leader-acquired', token: '11', valid: true }),
        at(3_000, 'w0.1', { op: 'leader-obs', token: '10', valid: true }), // a paused leader's loop after SIGCONT
        at(4_000, 'w2.1', { op: 'one-obs', n: 20, token: '20', valid: true }),
        at(4_100, 'w0.1', { op: 'one-obs', n: 21, token: '19', valid: true }),
        at(4_200, 'w2.1', { op: 'one-obs', n: 20, token: '20', valid: true }),
      ]).sort(),
    ).toEqual(['one-instance-overlap', 'one-instance-token-went-back', 'two-leaders']);
  });
});

describe('scheduled-work checker: early runs and leadership hooks', () => {
  it('a job run before its delay, a tick before its time, a phantom leadership term, a lost hook without its term', () => {
    expect(
      rules([
        at(0, 'w0.1', { op: 'tx-begin', job: 'a', intent: 'commit', delay: 500 }),
        at(10, 'w0.1', { op: 'committed', job: 'a' }),
        ...run(300, 'w1.1', 'a'),
        ...run(1_000, 'w1.1', `repeat:s0@${T0 + 1_200}`, 1, 'sw.ticks'),
        at(2_000, 'w1.1', { op: 'leader-acquired', token: '11', valid: true }),
        at(2_001, 'w1.1', { op: 'leader-lost', token: '11', reason: 'LockLostError: its lease ended before it was extended' }),
        at(3_000, 'w2.1', { op: 'leader-lost', token: '12', reason: 'LeadershipSteppedDownError' }),
      ]).sort(),
    ).toEqual(['leader-lost-without-term', 'phantom-leader-term', 'ran-early', 'ran-early']);
  });
});

describe('scheduled-work checker: Redis restarted empty', () => {
  it('excuses a leader that saw itself leading after Redis forgot its lock, until one ttl after Redis was back; not later', () => {
    const events = [
      at(1_000, 'w0.1', { op: 'leader-acquired', token: '10', valid: true }),
      ...fault(1_100, 1_300, 'redis-empty'),
      at(1_400, 'w1.1', { op: 'leader-acquired', token: '11', valid: true }),
      at(1_500, 'w0.1', { op: 'leader-obs', token: '10', valid: true }), // renewal not yet due
    ];
    expect(rules(events)).toEqual([]);
    expect(rules([...events, at(2_400, 'w0.1', { op: 'leader-obs', token: '10', valid: true })])).toEqual(['two-leaders']);
  });
});

describe('scheduled-work checker: @OnOneInstance ticks', () => {
  it('a tick run on two instances is a violation, unless a fault hit one of them within a ttl before', () => {
    const events = [
      at(1_000, 'w0.1', { op: 'one-obs', n: 5, token: '10', valid: true }),
      at(1_030, 'w0.1', { op: 'one-obs', n: 5, token: '10', valid: true }),
      at(1_100, 'w1.1', { op: 'one-obs', n: 5, token: '11', valid: true }),
    ];
    expect(rules(events)).toEqual(['one-instance-tick-twice']);
    expect(rules([...events, ...fault(500, 900, 'stall', 0)])).toEqual([]);
  });
});

describe('scheduled-work checker: data loss and open faults', () => {
  it(
    'a job whose after-commit write landed just before Redis was restarted empty, before COMMIT returned, ' + 'is lost to the data loss',
    () => {
      expect(
        rules([
          at(0, 'w0.1', { op: 'tx-begin', job: 'a', intent: 'commit' }),
          ...fault(50, 300, 'redis-empty'),
          at(100, 'w0.1', { op: 'committed', job: 'a' }),
        ]),
      ).toEqual([]);
    },
  );

  it('a fault begun and never ended does not hide the ticks after the last fault that ended', () => {
    expect(
      rules([
        ...fault(50_000, 51_000, 'redis-empty'),
        at(90_000, 'driver', { op: 'fault', kind: 'lost-reply', slot: 0, phase: 'start', n: 7 }),
      ]),
    ).toEqual([]);
  });
});
