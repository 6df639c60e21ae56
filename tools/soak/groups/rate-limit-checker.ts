/**
 * The rate-limit checker's judge: a pure function over the claims of a topic consumed with
 * `rateLimit: { max, duration }` by several instances (test/faults/rate-limit-checker.spec.ts records
 * them; unit-tested in test/unit/group-checker.spec.ts).
 *
 * A claim's time is `JobContext.claimedAt` in ms on the Redis server clock, floored from the µs the
 * claim script read (`TIME`). The script keeps, for every claim at u µs, at most `max` claims in
 * (u - duration·1000, u]; two claims whose floored ms differ by less than `duration` are less than
 * `duration` ms apart in µs. So the rule on the ms times is the half-open window:
 * - `rate-window-exceeded`: more than `max` claims with claimedAt in [t, t + duration) for some t.
 *   Every delivery is a claim, a redelivery after a kill too.
 * - `rate-job-not-handled` / `rate-job-dead`: a scheduled job was never handled, or went to the
 *   dead letters: jobs over the limit wait, they are not failed.
 * - `rate-retried-without-cause`: a delivery with attempt > 1 though no consumer was killed between
 *   its job's scheduling and the delivery's start (the handlers never fail: only a kill costs an
 *   attempt, the claim the killed consumer held).
 */

/** One handler start: the delivery's claim. */
export interface RateClaim {
  readonly job: string;
  readonly attempt: number;
  readonly claimedAtMs: number;
  readonly pid: number;
  /** CLOCK_MONOTONIC µs of the handler's start. */
  readonly startM: number;
}

export interface RateCheckInput {
  readonly max: number;
  readonly duration: number;
  readonly claims: readonly RateClaim[];
  /** Job ids with when their scheduling began (monotonic µs). */
  readonly scheduled: ReadonlyMap<string, number>;
  /** Jobs a handler finished. */
  readonly handled: ReadonlySet<string>;
  readonly dead: ReadonlySet<string>;
  /** When consumers were sent SIGKILL (monotonic µs). */
  readonly killsM: readonly number[];
}

export interface RateViolation {
  readonly rule: string;
  readonly message: string;
  readonly claims: readonly RateClaim[];
}

export function checkRateLimit(input: RateCheckInput): { violations: RateViolation[]; figures: { claims: number; fullestWindow: number; processes: number } } {
  const violations: RateViolation[] = [];
  const claims = [...input.claims].sort((a, b) => a.claimedAtMs - b.claimedAtMs);
  let fullestWindow = 0;
  let end = 0;
  for (let start = 0; start < claims.length; start++) {
    // Windows that begin at a claim are the fullest ones.
    while (end < claims.length && claims[end].claimedAtMs < claims[start].claimedAtMs + input.duration) end++;
    const inWindow = end - start;
    fullestWindow = Math.max(fullestWindow, inWindow);
    if (inWindow > input.max) {
      violations.push({
        rule: 'rate-window-exceeded',
        message: `${inWindow} claims within ${input.duration} ms from ${claims[start].claimedAtMs} (max ${input.max})`,
        claims: claims.slice(start, end),
      });
    }
  }
  for (const [job, scheduledM] of input.scheduled) {
    const mine = claims.filter((c) => c.job === job);
    if (!input.handled.has(job)) violations.push({ rule: 'rate-job-not-handled', message: `job ${job} was never handled`, claims: mine });
    if (input.dead.has(job)) violations.push({ rule: 'rate-job-dead', message: `job ${job} went to the dead letters`, claims: mine });
    for (const c of mine) {
      if (c.attempt > 1 && !input.killsM.some((k) => k > scheduledM && k < c.startM)) {
        violations.push({ rule: 'rate-retried-without-cause', message: `job ${job} ran as attempt ${c.attempt} though no consumer was killed`, claims: mine });
      }
    }
  }
  return { violations, figures: { claims: claims.length, fullestWindow, processes: new Set(claims.map((c) => c.pid)).size } };
}
