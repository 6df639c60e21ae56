/** How much faster Redis's clock may run than this process's monotonic clock: 100 ppm (NTP keeps both far closer). */
const DRIFT_ALLOWANCE = 1e-4;
/** A sample older than this no longer bounds Redis's clock (a failover may have moved the topic to another server's clock). */
const BOUND_MAX_AGE_MS = 30_000;

/** A bound on (Redis's clock - performance.now()) in ms, and when (performance.now()) it was measured. */
interface OffsetBound {
  readonly bound: number;
  readonly at: number;
}

/**
 * Redis's clock as seen from this process: an offset to `performance.now()`, measured on every
 * claim from the script's TIME. Due times and visibility deadlines are Redis times, so local timers
 * aimed at them go through this.
 *
 * A script written at local time w and answered at local time r that read Redis's clock S bounds
 * the offset on both sides: S - r ≤ offset ≤ S - w (Redis read its clock after the write and before
 * the reply). The clock keeps the tightest recent bound of each side (widened by the drift allowed
 * since) and takes the middle of the two: a round trip made slow by a stalled link or a stalled
 * process (whose reply came seconds late, though Redis ran it at once) bounds loosely, and no longer
 * moves the estimate by half its length while an earlier, tighter sample still holds. Bounds that
 * contradict each other mean Redis's clock moved (a failover to another server, a clock step): the
 * clock starts again from the new sample.
 *
 * The upper bound also gives the earliest local moment at which Redis's clock can have shown a
 * given time (`earliestLocal`): a claim Redis ran late (a paused or busy server, a stalled link
 * that healed) is counted from its run, not from its write, and never from later than its run.
 */
export class ServerClock {
  private offset = 0;
  /** The tightest recent upper bound of the offset (Redis read its clock after the write). */
  private ahead?: OffsetBound;
  /** The tightest recent lower bound of the offset (Redis read its clock before the reply came). */
  private behind?: OffsetBound;

  /** `serverNowUs` was read by a script written at `sentAt` and answered at `receivedAt` (both `performance.now()`). */
  sync(serverNowUs: number, sentAt: number, receivedAt: number): void {
    const serverMs = serverNowUs / 1000;
    const upper = { bound: serverMs - sentAt, at: sentAt };
    const lower = { bound: serverMs - receivedAt, at: receivedAt };
    if (upper.bound <= this.aheadBound(sentAt)) this.ahead = upper;
    if (lower.bound >= this.behindBound(receivedAt)) this.behind = lower;
    if (this.behindBound(receivedAt) > this.aheadBound(receivedAt)) {
      this.ahead = upper;
      this.behind = lower;
    }
    this.offset = (this.aheadBound(receivedAt) + this.behindBound(receivedAt)) / 2;
  }

  /** Redis's current time in ms, as last measured. */
  now(): number {
    return performance.now() + this.offset;
  }

  /**
   * The earliest local time (`performance.now()`) at which Redis's clock can have read `serverMs`,
   * after a `sync` (else -Infinity: no bound). Never later than the true moment, as long as the two
   * clocks run at one rate within DRIFT_ALLOWANCE.
   */
  earliestLocal(serverMs: number): number {
    return serverMs - this.aheadBound(performance.now());
  }

  private aheadBound(at: number): number {
    if (!this.ahead || at - this.ahead.at > BOUND_MAX_AGE_MS) return Number.POSITIVE_INFINITY;
    return this.ahead.bound + Math.max(0, at - this.ahead.at) * DRIFT_ALLOWANCE;
  }

  private behindBound(at: number): number {
    if (!this.behind || at - this.behind.at > BOUND_MAX_AGE_MS) return Number.NEGATIVE_INFINITY;
    return this.behind.bound - Math.max(0, at - this.behind.at) * DRIFT_ALLOWANCE;
  }
}
