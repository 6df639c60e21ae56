/** How much faster Redis's clock may run than this process's monotonic clock: 100 ppm (NTP keeps both far closer). */
const DRIFT_ALLOWANCE = 1e-4;
/** A sample older than this no longer bounds Redis's clock (a failover may have moved the topic to another server's clock). */
const BOUND_MAX_AGE_MS = 30_000;

/** Samples kept per side at most: the window is a handful in practice (see BoundWindow). */
const MAX_SAMPLES = 64;

/**
 * Redis's clock as seen from this process: an offset to `performance.now()`, measured on every
 * claim from the script's TIME. Due times and visibility deadlines are Redis times, so local timers
 * aimed at them go through this.
 *
 * A script written at local time w and answered at local time r that read Redis's clock S bounds
 * the offset on both sides: S - r ≤ offset ≤ S - w (Redis read its clock after the write and before
 * the reply). The clock keeps, on each side, the tightest bound of the last 30 s and of the latest
 * sample (each widened by the drift allowed since it was measured) and takes the middle of the two
 * sides: a round trip made slow by a stalled link or process (its reply seconds late, though Redis
 * ran it at once) or by a paused server bounds loosely, and does not move the estimate by half its
 * length while a tighter recent sample holds. The latest sample never expires, so the bounds are
 * finite after the first claim, however long a claim took or the consumer was idle. Bounds that
 * contradict each other mean Redis's clock moved (a failover to another server, a clock step): the
 * clock starts again from the latest sample. A move smaller than the samples' spread goes unseen
 * until a tight sample shows it.
 *
 * The upper bound also gives the earliest local moment at which Redis's clock can have shown a
 * given time (`earliestLocal`): a claim Redis ran late (a paused or busy server, a stalled link
 * that healed) is counted from its run, not from its write, and never from later than its run.
 */
export class ServerClock {
  private offset = 0;
  /** Redis read its clock after the write: offset ≤ S - sentAt. */
  private readonly upper = new BoundWindow();
  /** Redis read its clock before the reply came: offset ≥ S - receivedAt, kept negated (the tightest is the least). */
  private readonly lower = new BoundWindow();

  /** `serverNowUs` was read by a script written at `sentAt` and answered at `receivedAt` (both `performance.now()`). */
  sync(serverNowUs: number, sentAt: number, receivedAt: number): void {
    const serverMs = serverNowUs / 1000;
    this.upper.add({ bound: serverMs - sentAt, at: sentAt }, receivedAt);
    this.lower.add({ bound: receivedAt - serverMs, at: receivedAt }, receivedAt);
    if (-this.lower.tightest(receivedAt) > this.upper.tightest(receivedAt)) {
      this.upper.keepLatestOnly();
      this.lower.keepLatestOnly();
    }
    this.offset = (this.upper.tightest(receivedAt) - this.lower.tightest(receivedAt)) / 2;
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
    return serverMs - this.upper.tightest(performance.now());
  }
}

/** An upper bound on a value that may grow by DRIFT_ALLOWANCE per ms, and when (performance.now()) it was measured. */
interface DriftingBound {
  readonly bound: number;
  readonly at: number;
}

/**
 * The least of the upper bounds measured in the last BOUND_MAX_AGE_MS and the latest one, each
 * widened by the drift allowed since. A sliding-window minimum: a new sample drops the older ones it
 * is at least as tight as (widening keeps their order, so they can never be the least again), and
 * the oldest leaves when it expires, unless it is the latest. What stays is ordered from the
 * tightest to the latest; with round trips that vary at random, a handful.
 */
class BoundWindow {
  private samples: DriftingBound[] = [];

  add(sample: DriftingBound, now: number): void {
    const { samples } = this;
    while (samples.length > 0 && widened(samples[samples.length - 1]!, sample.at) >= sample.bound) samples.pop();
    samples.push(sample);
    if (samples.length > MAX_SAMPLES) samples.shift();
    this.expire(now);
  }

  /** The tightest bound at local time `at` (+Infinity before any sample). */
  tightest(at: number): number {
    this.expire(at);
    const first = this.samples[0];
    return first ? widened(first, at) : Number.POSITIVE_INFINITY;
  }

  keepLatestOnly(): void {
    this.samples = this.samples.slice(-1);
  }

  private expire(at: number): void {
    while (this.samples.length > 1 && at - this.samples[0]!.at > BOUND_MAX_AGE_MS) this.samples.shift();
  }
}

/** A bound at local time `at`, widened by the drift allowed since it was measured. */
function widened(sample: DriftingBound, at: number): number {
  return sample.bound + Math.max(0, at - sample.at) * DRIFT_ALLOWANCE;
}
