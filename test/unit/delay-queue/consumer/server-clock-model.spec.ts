import { ServerClock } from '../../../../lib/delay-queue/consumer/server-clock.js';

/*
 * ServerClock against a modelled Redis clock (from the second outside review of the clock), with
 * performance.now() faked so that now()/earliestLocal() are read at a chosen local time.
 */

let fakeNow = 0;
const realNow = performance.now;
beforeAll(() => {
  performance.now = () => fakeNow;
});
afterAll(() => {
  performance.now = realNow;
});

/** Redis's clock: offset(t) = BASE + rate * t (rate within ±100 ppm), plus a step from `stepAt`. */
interface Server {
  base: number;
  rate: number;
  step: number;
  stepAt: number;
}
const redisAt = (s: Server, t: number) => t + s.base + s.rate * t + (t >= s.stepAt ? s.step : 0);

/** A claim written at w, run by Redis f ms later, answered b ms after the run; returns S (ms) and the run's local time. */
function claim(clock: ServerClock, s: Server, w: number, f: number, b: number): { S: number; run: number; r: number } {
  const run = w + f;
  const r = run + b;
  const S = redisAt(s, run);
  fakeNow = r;
  clock.sync(S * 1000, w, r);
  return { S, run, r };
}

describe('ServerClock against a modelled Redis clock', () => {
  it('keeps the tightest sample of the window: when the lucky one expires, the next tightest bounds a late reply', () => {
    const s: Server = { base: 1.7e12, rate: 0, step: 0, stepAt: Infinity };
    const clock = new ServerClock();
    // One lucky fast round trip (0.2 ms), then a claim every 2 s at a usual 10 ms round trip
    // (a remote Redis: more than 3 ms of jitter, the drift widening over 30 s).
    claim(clock, s, 0, 0.1, 0.1);
    for (let w = 2_000; w <= 28_000; w += 2_000) claim(clock, s, w, 5, 5);
    fakeNow = 29_000;
    const before = clock.now() - redisAt(s, fakeNow);
    // Redis runs the next claim at once; its reply comes 1.5 s late (the claim-reply-late case).
    const late = claim(clock, s, 29_500, 1, 1_500);
    const after = clock.now() - redisAt(s, late.r);
    // The sample of 2 s before (10 ms round trip, well inside 30 s) still bounds the offset within
    // ~5 ms. Before (one slot, holding the lucky sample, 31 s old at this reply): 749 ms behind.
    expect(Math.abs(before)).toBeLessThan(5);
    expect(Math.abs(after)).toBeLessThan(10);
  });

  it('keeps to the lucky sample while it is less than 30 s old', () => {
    const s: Server = { base: 1.7e12, rate: 0, step: 0, stepAt: Infinity };
    const clock = new ServerClock();
    claim(clock, s, 0, 0.1, 0.1);
    for (let w = 2_000; w <= 26_000; w += 2_000) claim(clock, s, w, 5, 5);
    const late = claim(clock, s, 27_000, 1, 1_500);
    const after = clock.now() - redisAt(s, late.r);
    expect(Math.abs(after)).toBeLessThan(10);
  });

  it('an unseen forward step of the Redis clock (a failover) moves earliestLocal no later than the reply', () => {
    // Known limit: a server 1 s ahead, and the first claim's reply comes 2 s late: its lower bound
    // does not pass the old tight upper bound, so nothing resets, and the earliest moment of the run
    // comes out up to 1 s late (the data cannot tell it from Redis running the claim late). It never
    // passes the reply's arrival, and the next claim with a fast reply shows the step and resets.
    const s: Server = { base: 1.7e12, rate: 0, step: 1_000, stepAt: 5_000 };
    const clock = new ServerClock();
    claim(clock, s, 0, 0.1, 0.1);
    const c = claim(clock, s, 10_000, 0.1, 2_000);
    expect(clock.earliestLocal(c.S)).toBeLessThanOrEqual(c.r);
    const next = claim(clock, s, c.r + 100, 0.1, 0.1);
    expect(clock.earliestLocal(next.S)).toBeLessThanOrEqual(next.run + 1e-6);
    expect(Math.abs(clock.now() - redisAt(s, next.r))).toBeLessThan(1);
  });

  it('random claims (drift within 100 ppm, no step): bounds hold, now() never ahead by more than half the forward delay', () => {
    let seed = 12345;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    let worstEarliest = -Infinity;
    let worstAhead = -Infinity;
    let worstBehindTight = -Infinity;
    for (let run = 0; run < 300; run++) {
      const s: Server = { base: 1.7e12 + rnd() * 1e6, rate: (rnd() * 2 - 1) * 0.99e-4, step: 0, stepAt: Infinity };
      const clock = new ServerClock();
      let w = 1_000 + rnd() * 1_000;
      for (let i = 0; i < 200; i++) {
        const roll = rnd();
        const f = roll < 0.05 ? rnd() * 3_000 : rnd() * 3; // sometimes a paused server
        const b = roll > 0.95 ? rnd() * 3_000 : rnd() * 3; // sometimes a stalled reply
        const c = claim(clock, s, w, f, b);
        expect(clock.now()).toBeLessThan(Infinity);
        // earliestLocal never after the true run (the claim's own S).
        worstEarliest = Math.max(worstEarliest, clock.earliestLocal(c.S) - c.run);
        // now() ahead of Redis by at most half the forward delay of the latest claim (+ drift).
        const ahead = clock.now() - redisAt(s, c.r);
        worstAhead = Math.max(worstAhead, ahead - f / 2);
        if (f < 3 && b < 3) worstBehindTight = Math.max(worstBehindTight, -ahead);
        const gap = rnd() < 0.1 ? 20_000 + rnd() * 20_000 : rnd() * 5_000;
        w = c.r + gap;
      }
    }
    expect(worstEarliest).toBeLessThanOrEqual(1e-6);
    expect(worstAhead).toBeLessThanOrEqual(1);
    // After a claim with a fast round trip (< 6 ms), never behind by more than half of it.
    expect(worstBehindTight).toBeLessThanOrEqual(3);
  });

  it('steps back and forth (ping-pong between two clocks): follows the latest, never a contradiction left standing', () => {
    const a: Server = { base: 1.7e12, rate: 0, step: 0, stepAt: Infinity };
    const bSrv: Server = { base: 1.7e12 + 10_000, rate: 0, step: 0, stepAt: Infinity };
    const clock = new ServerClock();
    let w = 0;
    for (let i = 0; i < 20; i++) {
      const s = i % 2 === 0 ? a : bSrv;
      const c = claim(clock, s, w, 0.2, 0.2);
      expect(Math.abs(clock.now() - redisAt(s, c.r))).toBeLessThan(1);
      expect(clock.earliestLocal(c.S)).toBeLessThanOrEqual(c.run + 1e-3);
      expect(clock.earliestLocal(c.S)).toBeGreaterThanOrEqual(w - 1e-3);
      w = c.r + 100;
    }
  });

  it('edges: sentAt == receivedAt, identical samples, exactly 30 s, serverNowUs backwards by less than a round trip', () => {
    const s: Server = { base: 1.7e12, rate: 0, step: 0, stepAt: Infinity };
    const clock = new ServerClock();
    fakeNow = 100;
    clock.sync(redisAt(s, 100) * 1000, 100, 100);
    expect(clock.now() - redisAt(s, 100)).toBeCloseTo(0, 6);
    clock.sync(redisAt(s, 100) * 1000, 100, 100);
    expect(clock.now() - redisAt(s, 100)).toBeCloseTo(0, 6);
    // Exactly 30 s later, a looser sample: the first still counts (<= 30 s), widened by 3 ms.
    fakeNow = 30_110;
    clock.sync(redisAt(s, 30_105) * 1000, 30_100, 30_110);
    const e = clock.now() - redisAt(s, 30_110);
    expect(Math.abs(e)).toBeLessThanOrEqual(5);
    // Redis clock 0.5 ms back (less than a round trip's slack): no reset, still finite and close.
    const s2: Server = { ...s, step: -0.5, stepAt: 0 };
    clock.sync(redisAt(s2, 31_001) * 1000, 31_000, 31_002);
    fakeNow = 31_002;
    expect(Math.abs(clock.now() - redisAt(s2, 31_002))).toBeLessThan(3);
  });
});
