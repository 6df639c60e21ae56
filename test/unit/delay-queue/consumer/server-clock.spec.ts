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
});
