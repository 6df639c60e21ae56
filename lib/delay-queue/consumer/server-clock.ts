/** How much faster Redis's clock may run than this process's monotonic clock: 100 ppm (NTP keeps both far closer). */
const DRIFT_ALLOWANCE = 1e-4;
/** A sample older than this no longer bounds Redis's clock (a failover may have moved the topic to another server's clock). */
const BOUND_MAX_AGE_MS = 30_000;

/**
 * Redis's clock as seen from this process: an offset to `performance.now()`, measured on every
 * claim from the script's TIME. Due times and visibility deadlines are Redis times, so local timers
 * aimed at them go through this.
 *
 * Besides the estimate, the clock keeps a bound: a script written at local time w that read Redis's
 * clock S shows that Redis's clock was at most S - w ahead of ours (it read S after the write).
 * The tightest recent such bound gives the earliest local moment at which Redis's clock can have
 * shown a given time (`earliestLocal`): a claim Redis ran late (a paused or busy server, a stalled
 * link that healed) is counted from its run, not from its write, and never from later than its run.
 */
export class ServerClock {
  private offset = 0;
  /** The tightest recent upper bound of (Redis's clock - performance.now()) in ms, and when it was measured. */
  private ahead?: { readonly bound: number; readonly at: number };

  /**
   * `serverNowUs` was read by a script written at `sentAt` and answered at `receivedAt` (both
   * `performance.now()`); taking the midpoint bounds the error by half a round trip.
   */
  sync(serverNowUs: number, sentAt: number, receivedAt: number): void {
    this.offset = serverNowUs / 1000 - (sentAt + receivedAt) / 2;
    const bound = serverNowUs / 1000 - sentAt;
    if (bound <= this.aheadBound(sentAt)) this.ahead = { bound, at: sentAt };
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
}
