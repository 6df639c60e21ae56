import type { HistoryEvent } from '../../tools/soak/history.js';
import { parseLogLine } from '../../tools/soak/history.js';
import { checkHistory, type CheckOptions } from '../../tools/soak/history-checker.js';

/** Builds a hand-made history: events get increasing `seq` and, unless given, `us` 1 ms apart. */
function history(...events: Array<Partial<HistoryEvent> & Pick<HistoryEvent, 'op'>>): HistoryEvent[] {
  const base = 1_700_000_000_000_000;
  return events.map((e, i) => ({ seq: i + 1, us: base + i * 1_000, w: 'w0.1', ok: true, ...e }) as HistoryEvent);
}

/** A whole exclusive hold that went by the book: invoke, enter, write, leave, release. */
function hold(id: string, key: string, token: string, value: number, kind: HistoryEvent['kind'] = 'plain') {
  return [
    { op: 'acquire-invoke', hold: id, kind, keys: [key] },
    { op: 'enter', hold: id, kind, key, token, value: value - 1 },
    { op: 'write', hold: id, kind, key, token, value },
    { op: 'leave', hold: id, kind, key, token },
    { op: 'release', hold: id, kind, keys: [key], token },
  ] as const;
}

const options: CheckOptions = { permits: { sem: 2 } };
const rules = (events: HistoryEvent[], opts: CheckOptions = options) => checkHistory(events, opts).violations.map((v) => v.rule);

describe('history checker', () => {
  it('finds nothing wrong in a history that keeps every rule', () => {
    const events = history(
      ...hold('a', 'x0', '1', 1),
      ...hold('b', 'x0', '2', 2, 'fair'),
      // two readers of one read phase share their token, and overlap
      { op: 'acquire-invoke', hold: 'r1', kind: 'read', keys: ['rw'] },
      { op: 'enter', hold: 'r1', kind: 'read', key: 'rw', token: '5', value: 0 },
      { op: 'acquire-invoke', hold: 'r2', kind: 'read', keys: ['rw'] },
      { op: 'enter', hold: 'r2', kind: 'read', key: 'rw', token: '5', value: 0 },
      { op: 'leave', hold: 'r1', kind: 'read', key: 'rw', token: '5' },
      { op: 'release', hold: 'r1', kind: 'read', keys: ['rw'], token: '5' },
      // a reader that asks after r1 released may still share r2's token
      { op: 'acquire-invoke', hold: 'r3', kind: 'read', keys: ['rw'] },
      { op: 'enter', hold: 'r3', kind: 'read', key: 'rw', token: '5', value: 0 },
      { op: 'leave', hold: 'r2', kind: 'read', key: 'rw', token: '5' },
      { op: 'leave', hold: 'r3', kind: 'read', key: 'rw', token: '5' },
      ...hold('w1', 'rw', '6', 1, 'write'),
      // a stale holder stopped by the fence, and the library knew its lease was gone
      { op: 'acquire-invoke', hold: 'c', kind: 'plain', keys: ['x0'] },
      { op: 'enter', hold: 'c', kind: 'plain', key: 'x0', token: '3', value: 2 },
      ...hold('d', 'x0', '4', 3),
      { op: 'write', hold: 'c', kind: 'plain', key: 'x0', token: '3', value: 3, ok: false, seen: '4' },
      { op: 'held-check', hold: 'c', kind: 'plain', key: 'x0', token: '3', held: false },
      // a multi-key hold: one token per key
      { op: 'acquire-invoke', hold: 'm', kind: 'multi', keys: ['x0', 'x1'] },
      { op: 'enter', hold: 'm', kind: 'multi', key: 'x0', token: '7', value: 3 },
      { op: 'enter', hold: 'm', kind: 'multi', key: 'x1', token: '1', value: 0 },
      { op: 'release', hold: 'm', kind: 'multi', keys: ['x0', 'x1'], token: '7,1' },
      // two permits of two, a third whose permit had ended, a refused late comer
      { op: 'sem-enter', hold: 's1', kind: 'semaphore', key: 'sem', token: '1', endsAtMs: 1_700_000_000_100 },
      { op: 'sem-enter', hold: 's2', kind: 'semaphore', key: 'sem', token: '2', endsAtMs: 1_700_000_010_000 },
      { op: 'sem-enter', hold: 's3', kind: 'semaphore', key: 'sem', token: '3', endsAtMs: 1_700_000_010_000, us: 1_700_000_000_200_000 },
      {
        op: 'sem-enter',
        hold: 's4',
        kind: 'semaphore',
        key: 'sem',
        token: '4',
        endsAtMs: 1_700_000_000_000,
        ok: false,
        us: 1_700_000_000_200_000,
      },
      { op: 'sem-leave', hold: 's2', kind: 'semaphore', key: 'sem' },
      // a job due 10 ms after its schedule() began, run once on time and once more (at least once)
      { op: 'schedule-invoke', job: 'j1', delayMs: 10, us: 1_700_000_001_000_500 },
      { op: 'scheduled', job: 'j1', us: 1_700_000_001_001_000 },
      { op: 'run', job: 'j1', attempt: 1, us: 1_700_000_001_010_000 },
      { op: 'run', job: 'j1', attempt: 2, us: 1_700_000_001_500_000 },
      { op: 'schedule-invoke', job: 'j2', atMs: 1_700_000_002_000 },
      { op: 'schedule-failed', job: 'j2' },
    );
    const result = checkHistory(events, { ...options, deadJobs: [] });
    expect(result.violations).toEqual([]);
    expect(result.figures.byKind.plain).toMatchObject({ holds: 3, acceptedWrites: 2, refusedByFence: 1 });
    expect(result.figures.byKind.read.holds).toBe(3);
    expect(result.figures.semaphore).toEqual({ enters: 3, refusedExpired: 1, maxOccupancy: 2 });
    expect(result.figures.jobs).toMatchObject({ scheduled: 1, ran: 1, runs: 2, duplicates: 1, scheduleFailed: 1 });
  });

  it('detects two exclusive holds whose accepted writes overlap', () => {
    const events = history(
      { op: 'enter', hold: 'a', kind: 'plain', key: 'x0', token: '5', value: 0 },
      { op: 'enter', hold: 'b', kind: 'plain', key: 'x0', token: '5', value: 0 },
      { op: 'write', hold: 'a', kind: 'plain', key: 'x0', token: '5', value: 1 },
      { op: 'write', hold: 'b', kind: 'plain', key: 'x0', token: '5', value: 1 },
    );
    expect(rules(events)).toEqual(expect.arrayContaining(['overlapping-holders', 'fence-repeated', 'lost-update']));
  });

  it('reports a hold that others got into once, with how many got in', () => {
    const events = history(
      { op: 'enter', hold: 'stale', kind: 'reentrant', key: 'x0', token: '1', value: 0 },
      { op: 'enter', hold: 'b', kind: 'plain', key: 'x0', token: '2', value: 0 },
      { op: 'enter', hold: 'c', kind: 'plain', key: 'x0', token: '3', value: 0 },
      { op: 'leave', hold: 'stale', kind: 'reentrant', key: 'x0', token: '1' },
    );
    const overlapping = checkHistory(events, options).violations.filter((v) => v.rule === 'overlapping-holders');
    expect(overlapping).toHaveLength(1);
    expect(overlapping[0].message).toMatch(/hold b .* inside hold stale .*, and 1 more hold\(s\) after it$/);
  });

  it('detects a writer overlapping a reader, but lets readers overlap', () => {
    const events = history(
      { op: 'enter', hold: 'r', kind: 'read', key: 'rw', token: '5', value: 0 },
      { op: 'enter', hold: 'w', kind: 'write', key: 'rw', token: '6', value: 0 },
      { op: 'leave', hold: 'r', kind: 'read', key: 'rw', token: '6' },
    );
    // the reader's leave with another token is also caught as a token change
    expect(rules(events)).toEqual(expect.arrayContaining(['overlapping-holders', 'hold-token-changed']));
  });

  it('detects a fence that goes back among accepted operations', () => {
    const events = history(...hold('a', 'x0', '10', 1), { op: 'enter', hold: 'b', kind: 'plain', key: 'x0', token: '9', value: 1 });
    expect(rules(events)).toEqual(['fence-went-back']);
  });

  it('compares tokens as numbers, not as strings', () => {
    const events = history(...hold('a', 'x0', '9', 1), ...hold('b', 'x0', '10', 2), ...hold('c', 'x0', '1732380000123456', 3));
    expect(rules(events)).toEqual([]);
  });

  it('detects a hold that asked after another was released and got an older token, even if the store refused it', () => {
    const events = history(
      ...hold('a', 'x0', '10', 1),
      { op: 'acquire-invoke', hold: 'b', kind: 'plain', keys: ['x0'] },
      { op: 'enter', hold: 'b', kind: 'plain', key: 'x0', token: '10', ok: false, seen: '10' },
    );
    expect(rules(events)).toEqual(['fence-not-fresh']);
  });

  it('detects a writer sharing a token with a released reader', () => {
    const events = history(
      { op: 'acquire-invoke', hold: 'r', kind: 'read', keys: ['rw'] },
      { op: 'enter', hold: 'r', kind: 'read', key: 'rw', token: '4', value: 0 },
      { op: 'release', hold: 'r', kind: 'read', keys: ['rw'], token: '4' },
      { op: 'acquire-invoke', hold: 'w', kind: 'write', keys: ['rw'] },
      { op: 'enter', hold: 'w', kind: 'write', key: 'rw', token: '4', value: 0 },
    );
    expect(rules(events)).toEqual(expect.arrayContaining(['fence-not-fresh', 'fence-repeated']));
  });

  it('detects a hold refused by the fence while the library still said it held the lock', () => {
    const events = history(
      { op: 'enter', hold: 'a', kind: 'fair', key: 'f0', token: '1', value: 0 },
      { op: 'enter', hold: 'b', kind: 'fair', key: 'f0', token: '2', value: 0 },
      { op: 'write', hold: 'a', kind: 'fair', key: 'f0', token: '1', value: 1, ok: false, seen: '2' },
      { op: 'held-check', hold: 'a', kind: 'fair', key: 'f0', token: '1', held: true },
    );
    expect(rules(events)).toEqual(['two-holders-at-once']);
  });

  it('detects a re-entered hold that changed its token', () => {
    const events = history(
      { op: 'enter', hold: 'a', kind: 'reentrant', key: 'x0', token: '1', value: 0 },
      { op: 'write', hold: 'a', kind: 'reentrant', key: 'x0', token: '2', value: 1 },
    );
    expect(rules(events)).toEqual(['hold-token-changed']);
  });

  it('detects a lost update: an accepted write that did not build on the previous one', () => {
    const events = history(...hold('a', 'x0', '1', 1), ...hold('b', 'x0', '2', 1));
    expect(rules(events)).toEqual(['lost-update']);
  });

  it('detects more semaphore holders than permits, counting only permits that had not ended', () => {
    const long = 1_700_000_010_000;
    const events = history(
      { op: 'sem-enter', hold: 's1', kind: 'semaphore', key: 'sem', token: '1', endsAtMs: long },
      { op: 'sem-enter', hold: 's2', kind: 'semaphore', key: 'sem', token: '2', endsAtMs: long },
      { op: 'sem-enter', hold: 's3', kind: 'semaphore', key: 'sem', token: '3', endsAtMs: long },
    );
    const result = checkHistory(events, options);
    expect(result.violations.map((v) => v.rule)).toEqual(['semaphore-over-occupancy']);
    expect(result.violations[0].events.map((e) => e.hold)).toEqual(['s1', 's2', 's3']);
  });

  it('detects two permits with one token', () => {
    const events = history(
      { op: 'sem-enter', hold: 's1', kind: 'semaphore', key: 'sem', token: '1', endsAtMs: 1_800_000_000_000 },
      { op: 'sem-leave', hold: 's1', kind: 'semaphore', key: 'sem' },
      { op: 'sem-enter', hold: 's2', kind: 'semaphore', key: 'sem', token: '1', endsAtMs: 1_800_000_000_000 },
    );
    expect(rules(events)).toEqual(['fence-repeated']);
  });

  it('detects a job run before it was due (by delay and by at)', () => {
    const t = 1_700_000_000_000_000;
    const events = history(
      { op: 'schedule-invoke', job: 'j1', delayMs: 100, us: t },
      { op: 'scheduled', job: 'j1', us: t + 1_000 },
      { op: 'run', job: 'j1', attempt: 1, us: t + 99_000 },
      { op: 'schedule-invoke', job: 'j2', atMs: 1_700_000_000_500, us: t + 2_000 },
      { op: 'scheduled', job: 'j2', us: t + 3_000 },
      { op: 'run', job: 'j2', attempt: 1, us: t + 500_000 },
      { op: 'run', job: 'j2', attempt: 2, us: t + 499_999 },
    );
    const result = checkHistory(events, options);
    expect(result.violations.map((v) => [v.rule, v.job])).toEqual([
      ['job-ran-early', 'j1'],
      ['job-ran-early', 'j2'],
    ]);
  });

  it('detects a scheduled job that never ran, a run out of nowhere and a dead letter that never ran', () => {
    const events = history(
      { op: 'schedule-invoke', job: 'j1', delayMs: 0 },
      { op: 'scheduled', job: 'j1' },
      { op: 'run', job: 'ghost', attempt: 1 },
      { op: 'schedule-invoke', job: 'j3', delayMs: 0 },
    );
    expect(checkHistory(events, { ...options, deadJobs: ['j3'] }).violations.map((v) => [v.rule, v.job])).toEqual([
      ['job-phantom-run', 'ghost'],
      ['job-never-ran', 'j1'],
      ['job-dead-without-run', 'j3'],
    ]);
    // while the queue has not drained, an unrun job is not (yet) a violation
    expect(rules(events, { ...options, requireAllJobsRan: false })).toEqual(['job-phantom-run']);
  });

  it('reads the store log format', () => {
    const event = parseLogLine('1 42 1700000000123456 7 {"w":"w1.2","op":"enter","hold":"h","kind":"plain","key":"x0","token":"3"}');
    expect(event).toMatchObject({ seq: 42, us: 1_700_000_000_123_456, ok: true, op: 'enter', value: 7, token: '3' });
    const refused = parseLogLine(
      '-1 43 1700000000123457 9 {"w":"w1.2","op":"write","hold":"h","kind":"plain","key":"x0","token":"3","value":8}',
    );
    expect(refused).toMatchObject({ ok: false, seen: '9', value: 8 });
  });
});
