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
 * the reply). The clock keeps, on each side, the latest sample's bound and the tightest bound of
 * the last 30 s (each widened by the drift allowed since), and takes the middle of the tighter of
 * each: a round trip made slow by a stalled link or process (its reply seconds late, though Redis
 * ran it at once) or by a paused server bounds loosely, and no longer moves the estimate by half
 * its length while an earlier, tighter sample still holds. The latest sample never expires, so the
 * bounds are finite after the first claim, however long a claim took or however long the consumer
 * was idle. Bounds that contradict each other mean Redis's clock moved (a failover to another
 * server, a clock step): the clock starts again from the latest sample.
 *
 * The upper bound also gives the earliest local moment at which Redis's clock can have shown a
 * given time (`earliestLocal`): a claim Redis ran late (a paused or busy server, a stalled link
 * that healed) is counted from its run, not from its write, and never from later than its run.
 */
export class ServerClock {
  private offset = 0;
  /** The latest sample's bounds: Redis read its clock after the write (upper) and before the reply (lower). */
  private latest?: { readonly upper: OffsetBound; readonly lower: OffsetBound };
  /** The tightest upper bound of the last BOUND_MAX_AGE_MS. */
  private tightestUpper?: OffsetBound;
  /** The tightest lower bound of the last BOUND_MAX_AGE_MS. */
  private tightestLower?: OffsetBound;

  /** `serverNowUs` was read by a script written at `sentAt` and answered at `receivedAt` (both `performance.now()`). */
  sync(serverNowUs: number, sentAt: number, receivedAt: number): void {
    const serverMs = serverNowUs / 1000;
    const upper = { bound: serverMs - sentAt, at: sentAt };
    const lower = { bound: serverMs - receivedAt, at: receivedAt };
    if (upper.bound <= recentUpper(this.tightestUpper, receivedAt)) this.tightestUpper = upper;
    if (lower.bound >= recentLower(this.tightestLower, receivedAt)) this.tightestLower = lower;
    this.latest = { upper, lower };
    if (this.lowerBound(receivedAt) > this.upperBound(receivedAt)) {
      this.tightestUpper = upper;
      this.tightestLower = lower;
    }
    this.offset = (this.upperBound(receivedAt) + this.lowerBound(receivedAt)) / 2;
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
    return serverMs - this.upperBound(performance.now());
  }

  /** The tighter of the latest and the tightest recent upper bound at local time `at` (+Infinity before any sample). */
  private upperBound(at: number): number {
    return Math.min(recentUpper(this.tightestUpper, at), this.latest ? widenedUpper(this.latest.upper, at) : Number.POSITIVE_INFINITY);
  }

  /** The tighter of the latest and the tightest recent lower bound at local time `at` (-Infinity before any sample). */
  private lowerBound(at: number): number {
    return Math.max(recentLower(this.tightestLower, at), this.latest ? widenedLower(this.latest.lower, at) : Number.NEGATIVE_INFINITY);
  }
}

/** An upper bound at local time `at`, widened by the drift allowed since it was measured. */
function widenedUpper(sample: OffsetBound, at: number): number {
  return sample.bound + Math.max(0, at - sample.at) * DRIFT_ALLOWANCE;
}

/** A lower bound at local time `at`, widened by the drift allowed since it was measured. */
function widenedLower(sample: OffsetBound, at: number): number {
  return sample.bound - Math.max(0, at - sample.at) * DRIFT_ALLOWANCE;
}

/** `widenedUpper`, or +Infinity once the sample is older than BOUND_MAX_AGE_MS (or there is none). */
function recentUpper(sample: OffsetBound | undefined, at: number): number {
  return sample && at - sample.at <= BOUND_MAX_AGE_MS ? widenedUpper(sample, at) : Number.POSITIVE_INFINITY;
}

/** `widenedLower`, or -Infinity once the sample is older than BOUND_MAX_AGE_MS (or there is none). */
function recentLower(sample: OffsetBound | undefined, at: number): number {
  return sample && at - sample.at <= BOUND_MAX_AGE_MS ? widenedLower(sample, at) : Number.NEGATIVE_INFINITY;
}
