import { ServerClock } from '../../../../lib/delay-queue/consumer/server-clock.js';

/** Redis's clock runs this far ahead of performance.now() in these specs. */
const TRUE_OFFSET = 5_000_000;

/** The offset the clock estimates now (the two reads of performance.now() are microseconds apart). */
const estimate = (clock: ServerClock) => clock.now() - performance.now();

/** A claim written at `sentAt` that Redis ran `ranAfter` ms later, answered at `receivedAt`. */
function claim(clock: ServerClock, sentAt: number, ranAfter: number, receivedAt: number): void {
  clock.sync((sentAt + ranAfter + TRUE_OFFSET) * 1000, sentAt, receivedAt);
}

describe('ServerClock (Redis clock estimate from claims)', () => {
  it('takes the middle of a lone round trip: the error is at most half of it', () => {
    const clock = new ServerClock();
    const t = performance.now() - 100;
    claim(clock, t, 1, t + 2);
    expect(Math.abs(estimate(clock) - TRUE_OFFSET)).toBeLessThanOrEqual(1);
  });

  it('keeps to an earlier, tighter sample when a reply comes seconds late though Redis ran the claim at once', () => {
    const clock = new ServerClock();
    const t = performance.now() - 5_000;
    claim(clock, t, 1, t + 2);
    // The next claim ran at once; its reply came 3 s late (a stalled link, a stalled process).
    claim(clock, t + 1_000, 1, t + 4_000);
    // The midpoint of that round trip alone was 1.5 s behind Redis (the next job 1.5 s late).
    expect(Math.abs(estimate(clock) - TRUE_OFFSET)).toBeLessThanOrEqual(2);
  });

  it('keeps to an earlier, tighter sample when Redis ran a claim late (paused)', () => {
    const clock = new ServerClock();
    const t = performance.now() - 5_000;
    claim(clock, t, 1, t + 2);
    // Redis ran it 3 s after the write and answered at once: its midpoint alone was 1.5 s ahead.
    claim(clock, t + 1_000, 3_000, t + 4_001);
    expect(Math.abs(estimate(clock) - TRUE_OFFSET)).toBeLessThanOrEqual(2);
    // The earliest local moment of a Redis time stays the tight bound (never after the true moment).
    const serverMs = t + 1_000 + 3_000 + TRUE_OFFSET;
    expect(clock.earliestLocal(serverMs)).toBeLessThanOrEqual(t + 4_000);
    expect(clock.earliestLocal(serverMs)).toBeGreaterThan(t + 4_000 - 2);
  });

  it("starts again from a sample that contradicts the earlier ones (Redis's clock moved: a failover, a clock step)", () => {
    const clock = new ServerClock();
    const t = performance.now() - 5_000;
    claim(clock, t, 1, t + 2);
    // Another server 10 s ahead: no offset fits both samples.
    clock.sync((t + 1_001 + TRUE_OFFSET + 10_000) * 1000, t + 1_000, t + 1_002);
    expect(Math.abs(estimate(clock) - (TRUE_OFFSET + 10_000))).toBeLessThanOrEqual(1);
    // And 10 s behind the first.
    clock.sync((t + 2_001 + TRUE_OFFSET - 10_000) * 1000, t + 2_000, t + 2_002);
    expect(Math.abs(estimate(clock) - (TRUE_OFFSET - 10_000))).toBeLessThanOrEqual(1);
  });

  it('lets old samples go: past 30 s a lone slow round trip is all there is', () => {
    const clock = new ServerClock();
    const t = performance.now() - 40_000;
    claim(clock, t, 1, t + 2);
    claim(clock, t + 35_000, 1, t + 38_000);
    expect(Math.abs(estimate(clock) - (TRUE_OFFSET - 1_499))).toBeLessThanOrEqual(1);
  });
  it('stays finite when a claim straddles the 30 s expiry of the tightest bound (found by the outside review)', () => {
    const clock = new ServerClock();
    const t = performance.now() - 40_000;
    claim(clock, t, 0.1, t + 0.3);
    // Sent 29.5 s after the tight sample, run 1.5 s late by Redis, answered after that sample expired.
    claim(clock, t + 29_500, 1_500, t + 31_001);
    // Before: the expired sample still stood for the upper bound (now() +Infinity, earliestLocal -Infinity).
    // Now this claim alone bounds the offset: within [its lower bound, its upper bound].
    expect(estimate(clock)).toBeGreaterThanOrEqual(TRUE_OFFSET - 2);
    expect(estimate(clock)).toBeLessThanOrEqual(TRUE_OFFSET + 1_500 + 5);
    // The claim's visibility starts no earlier than its write (less the drift allowed since: 1 ms
    // over 10 s), and no later than Redis's run of it.
    const ran = t + 29_500 + 1_500;
    expect(clock.earliestLocal(ran + TRUE_OFFSET)).toBeGreaterThanOrEqual(t + 29_500 - 5);
    expect(clock.earliestLocal(ran + TRUE_OFFSET)).toBeLessThanOrEqual(ran);
  });

  it('stays finite after a round trip longer than 30 s (a process stalled with a claim in flight)', () => {
    const clock = new ServerClock();
    const t = performance.now() - 40_000;
    claim(clock, t, 0.1, t + 0.3);
    claim(clock, t + 1_000, 0.1, t + 32_000);
    // The middle of its round trip (widened by 3 ms of allowed drift over 31 s).
    expect(Math.abs(estimate(clock) - (TRUE_OFFSET - 15_500))).toBeLessThanOrEqual(5);
    expect(Math.abs(clock.earliestLocal(t + 1_000.1 + TRUE_OFFSET) - (t + 1_000))).toBeLessThanOrEqual(5);
  });

  it('answers without any sample: Redis time as local time, no bound on the earliest moment', () => {
    const clock = new ServerClock();
    expect(Math.abs(estimate(clock))).toBeLessThanOrEqual(1);
    expect(clock.earliestLocal(123)).toBe(Number.NEGATIVE_INFINITY);
  });
});
