import { checkDedupeHistory, type DedupeCall, type DedupeRun } from '../../tools/soak/dedupe/dedupe-checker.js';

/** Hand-made histories (ms on one clock); the rules: tools/soak/dedupe/dedupe-checker.ts. */
const call = (name: string, sentMs: number, status: string, id: string, extra: Partial<DedupeCall> = {}): DedupeCall => ({
  call: name,
  instance: 0,
  key: 'k',
  mode: 'throttle',
  ttl: 100,
  sentMs,
  answeredMs: sentMs + 2,
  result: { id, status },
  ...extra,
});
const debounced = (name: string, sentMs: number, status: string, id: string, extra: Partial<DedupeCall> = {}) =>
  call(name, sentMs, status, id, { mode: 'debounce', ...extra });
/** A run of `job` with `payload`, stored at `createdAtMs`, due `delay` later, claimed when due. */
const run = (job: string, payload: string, createdAtMs: number, delay = 0, extra: Partial<DedupeRun> = {}): DedupeRun => ({
  job,
  key: 'k',
  payload,
  attempt: 1,
  createdAtMs,
  scheduledAtMs: createdAtMs + delay,
  claimedAtMs: createdAtMs + delay,
  endedMs: createdAtMs + delay + 5,
  ...extra,
});
const rules = (calls: DedupeCall[], runs: DedupeRun[]) => checkDedupeHistory({ calls, runs, toleranceMs: 1 }).violations.map((v) => v.rule);

describe('dedupe checker', () => {
  describe('throttle', () => {
    // Window J1 [0, 100] (its job ran at 1 and done at 6), J2 from 150.
    const calls = [
      call('a', 0, 'created', 'J1'),
      call('b', 1, 'existing', 'J1', { instance: 1 }),
      call('c', 50, 'existing', 'J1', { lostReply: true }), // after the run: still the window's job
      call('d', 97, 'existing', 'J1', { answeredMs: 104 }), // raced the expiry
      call('e', 150, 'created', 'J2', { instance: 2 }),
      call('f', 200, 'existing', 'J2'),
    ];
    const runs = [run('J1', 'a', 1), run('J2', 'e', 151)];

    it('finds nothing wrong in a history that keeps every rule, and counts what it saw', () => {
      const { violations, figures } = checkDedupeHistory({ calls, runs, toleranceMs: 1 });
      expect(violations).toEqual([]);
      expect(figures).toMatchObject({
        calls: 6,
        statuses: { created: 2, existing: 4 },
        keys: { throttle: 1, debounce: 0 },
        instances: 3,
        windows: 2,
        windowsWithExisting: 2,
        existingAfterRun: 3,
        racedExpiry: 1,
        racingCalls: 2,
        lostReplies: { existing: 1 },
      });
    });

    it('throttle-windows-overlap: two jobs created less than ttl apart', () => {
      expect(rules([...calls, call('g', 40, 'created', 'J3')], [...runs, run('J3', 'g', 41)])).toEqual(['throttle-windows-overlap']);
    });

    it('throttle-existing-outside-window: existing sent after the window closed, or answered before it opened', () => {
      expect(rules([...calls, call('g', 120, 'existing', 'J1')], runs)).toEqual(['throttle-existing-outside-window']);
      expect(rules([...calls, call('g', 140, 'existing', 'J2')], runs)).toEqual(['throttle-existing-outside-window']);
    });

    it('run-payload: the job ran with another call’s payload', () => {
      expect(rules(calls, [run('J1', 'b', 1), runs[1]])).toEqual(['run-payload']);
    });

    it('created-at: the job was stored outside its creating call', () => {
      expect(rules(calls, [run('J1', 'a', 4), runs[1]])).toEqual(['created-at']);
    });

    it('job-lost, job-ran-twice, run-without-call, answer-names-unknown-job, created-twice', () => {
      expect(rules(calls, [runs[0]])).toEqual(['job-lost']);
      expect(rules(calls, [...runs, run('J2', 'e', 151, 0, { attempt: 2 })])).toEqual(['job-ran-twice']);
      expect(rules(calls, [...runs, run('J9', 'c', 50)])).toEqual(['run-without-call']);
      expect(rules([...calls, call('g', 210, 'existing', 'J9')], runs)).toEqual(['answer-names-unknown-job']);
      expect(rules([...calls, call('g', 260, 'created', 'J2')], runs)).toEqual(['created-twice']);
    });

    it('call-failed and wrong-status', () => {
      expect(rules([...calls, { ...call('g', 210, '', ''), result: undefined, error: 'boom' }], runs)).toEqual(['call-failed']);
      expect(rules([...calls, call('g', 210, 'replaced', 'J2')], runs)).toEqual(['wrong-status']);
    });
  });

  describe('debounce', () => {
    // Burst 1: a, b (racing), c on D1; its run due at c's time + 100. Burst 2: d on D2.
    const calls = [
      debounced('a', 0, 'created', 'D1'),
      debounced('b', 1, 'replaced', 'D1', { instance: 1, answeredMs: 10 }),
      debounced('c', 60, 'replaced', 'D1', { instance: 2, lostReply: true }),
      debounced('d', 400, 'created', 'D2'),
    ];
    const runs = [run('D1', 'c', 61, 100), run('D2', 'd', 401, 100)];

    it('finds nothing wrong in a history that keeps every rule, and counts what it saw', () => {
      const { violations, figures } = checkDedupeHistory({ calls, runs, toleranceMs: 1 });
      expect(violations).toEqual([]);
      expect(figures).toMatchObject({
        keys: { throttle: 0, debounce: 1 },
        debounceJobs: 2,
        mostCallsOnOneJob: 3,
        payloadRaces: 0,
        racedClaim: 0,
        racingCalls: 2,
        lostReplies: { replaced: 1 },
      });
    });

    it('judges a run whose last call raced another against both, and counts the race', () => {
      const racing = [...calls.slice(0, 2), debounced('c', 5, 'replaced', 'D1', { instance: 2, answeredMs: 12 }), calls[3]];
      for (const payload of ['b', 'c']) {
        const { violations, figures } = checkDedupeHistory({ calls: racing, runs: [run('D1', payload, 9, 100), runs[1]], toleranceMs: 1 });
        expect(violations).toEqual([]);
        expect(figures.payloadRaces).toBe(1);
      }
    });

    it('debounce-split: calls certainly less than ttl apart landed on two jobs', () => {
      const split = [...calls.slice(0, 2), debounced('c', 60, 'created', 'D3'), calls[3]];
      expect(rules(split, [run('D1', 'b', 5, 100), run('D3', 'c', 61, 100), runs[1]])).toEqual([
        'debounce-split', // a and c
        'debounce-split', // b and c
      ]);
    });

    it('debounce-not-replaced: a call ttl or more after the last one created a job while the key’s job was not yet claimed', () => {
      // D1 was due at 161 but a busy consumer claimed it only at 420, after d (400-402) had run and created D2.
      const late = [run('D1', 'c', 61, 100, { claimedAtMs: 420 }), runs[1]];
      expect(rules(calls, late)).toEqual(['debounce-not-replaced']);
      // Not when D1 was claimed (running) before d was sent, even if it ends after d.
      expect(rules(calls, [run('D1', 'c', 61, 100, { claimedAtMs: 398, endedMs: 450 }), runs[1]])).toEqual([]);
    });

    it('excuses and counts a claim that raced the created call', () => {
      for (const claimedAtMs of [399, 401, 403]) {
        const { violations, figures } = checkDedupeHistory({
          calls,
          runs: [run('D1', 'c', 61, 100, { claimedAtMs }), runs[1]],
          toleranceMs: 1,
        });
        expect(violations).toEqual([]);
        expect(figures.racedClaim).toBe(1);
      }
    });

    it('debounce-due: not due ttl after the last call', () => {
      expect(rules(calls, [run('D1', 'c', 61, 130), runs[1]])).toEqual(['debounce-due']);
    });

    it('debounce-early-run: claimed before ttl after a call of the job', () => {
      expect(rules(calls, [run('D1', 'c', 61, 100, { claimedAtMs: 150 }), runs[1]])).toEqual(['debounce-early-run']);
    });

    it('debounce-payload: the payload is not that of the call stored last', () => {
      expect(rules(calls, [run('D1', 'a', 61, 100), runs[1]])).toEqual(['debounce-payload', 'debounce-payload-not-last']);
    });

    it('debounce-payload-not-last: the payload’s call was answered before another call of the job was sent', () => {
      // Stored at b's time, though c came later: due and payload both from b (so it also ran early for c).
      expect(rules(calls, [run('D1', 'b', 5, 100), runs[1]])).toEqual(['debounce-early-run', 'debounce-payload-not-last']);
    });

    it('judges a re-sent call by its first run: its re-run may not put its payload back over a later call', () => {
      // a's reply was dropped at 2 and it was answered (re-sent) only at 80, after b replaced its job.
      const resent = [
        debounced('a', 0, 'created', 'D1', { answeredMs: 80, ranByMs: 2, lostReply: true }),
        debounced('b', 10, 'replaced', 'D1', { instance: 1 }),
      ];
      expect(rules(resent, [run('D1', 'b', 11, 100)])).toEqual([]);
      expect(rules(resent, [run('D1', 'a', 70, 100)])).toEqual(['created-at', 'debounce-payload', 'debounce-payload-not-last']);
      expect(rules(resent, [run('D1', 'a', 1, 100)])).toEqual(['debounce-early-run', 'debounce-payload-not-last']);
    });
  });
});
