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
 *
 * Instances configured differently (`checkRateLimitPerInstance`): docs/delayed-jobs.md, "Rate limit
 * across instances": each consumer passes its own `rateLimit`, and instances configured differently
 * each apply their own against the same log of claims. So a claim by instance i (limit max_i per
 * duration_i) is taken only while the log, which holds every instance's claims, has fewer than max_i
 * claims within duration_i before it. The rule, on claim order (fencing tokens grow with every claim
 * on the topic, including the jobs of one claim call) and the floored ms times:
 * - `rate-own-limit-exceeded`: for a claim c of instance i, the claims x of ANY instance with
 *   token(x) <= token(c) and claimedAt(x) > claimedAt(c) - duration_i number more than max_i.
 *   Each such x is within duration_i µs before c (floor(u_x) >= floor(u_c) - duration_i + 1 >
 *   u_c - duration_i), so it was in c's window when c was claimed; claims exactly duration_i ms
 *   apart in floored ms are not counted (they may be just outside). This implies the per-instance
 *   window on its own claims: [t, t + duration_i) holds at most max_i claims of instance i.
 * `rate-job-not-handled`, `rate-job-dead` and `rate-retried-without-cause` as above.
 */

/** One handler start: the delivery's claim. */
export interface RateClaim {
  readonly job: string;
  readonly attempt: number;
  readonly claimedAtMs: number;
  readonly pid: number;
  /** CLOCK_MONOTONIC µs of the handler's start. */
  readonly startM: number;
  /** The delivery's fencing token: claims in claim order (needed by `checkRateLimitPerInstance`). */
  readonly token?: string;
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

export function checkRateLimit(input: RateCheckInput): {
  violations: RateViolation[];
  figures: { claims: number; fullestWindow: number; processes: number };
} {
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
  violations.push(...checkJobs(input, claims));
  return { violations, figures: { claims: claims.length, fullestWindow, processes: new Set(claims.map((c) => c.pid)).size } };
}

/** `rate-job-not-handled`, `rate-job-dead`, `rate-retried-without-cause`. */
function checkJobs(input: Omit<RateCheckInput, 'max' | 'duration'>, claims: readonly RateClaim[]): RateViolation[] {
  const violations: RateViolation[] = [];
  for (const [job, scheduledM] of input.scheduled) {
    const mine = claims.filter((c) => c.job === job);
    if (!input.handled.has(job)) violations.push({ rule: 'rate-job-not-handled', message: `job ${job} was never handled`, claims: mine });
    if (input.dead.has(job)) violations.push({ rule: 'rate-job-dead', message: `job ${job} went to the dead letters`, claims: mine });
    for (const c of mine) {
      if (c.attempt > 1 && !input.killsM.some((k) => k > scheduledM && k < c.startM)) {
        violations.push({
          rule: 'rate-retried-without-cause',
          message: `job ${job} ran as attempt ${c.attempt} though no consumer was killed`,
          claims: mine,
        });
      }
    }
  }
  return violations;
}

/** One instance's `rateLimit`. */
export interface RateLimitConfig {
  readonly max: number;
  readonly duration: number;
}

export interface PerInstanceRateCheckInput extends Omit<RateCheckInput, 'max' | 'duration'> {
  /** The limit of the instance each claim's process belongs to. */
  readonly limitOf: (pid: number) => RateLimitConfig;
}

/** See `rate-own-limit-exceeded` above. Figures: per process, the fullest window its own limit saw at one of its claims. */
export function checkRateLimitPerInstance(input: PerInstanceRateCheckInput): {
  violations: RateViolation[];
  figures: { claims: number; processes: number; limitReachedBy: number; fullestAtClaim: Record<string, string> };
} {
  const violations: RateViolation[] = [];
  const claims = [...input.claims].sort((a, b) => {
    if (a.token === undefined || b.token === undefined) throw new Error('checkRateLimitPerInstance needs every claim’s token');
    return BigInt(a.token) < BigInt(b.token) ? -1 : BigInt(a.token) > BigInt(b.token) ? 1 : 0;
  });
  const fullest = new Map<number, number>();
  for (const [index, c] of claims.entries()) {
    const { max, duration } = input.limitOf(c.pid);
    const inWindow = claims.slice(0, index + 1).filter((x) => x.claimedAtMs > c.claimedAtMs - duration);
    fullest.set(c.pid, Math.max(fullest.get(c.pid) ?? 0, inWindow.length));
    if (inWindow.length > max) {
      violations.push({
        rule: 'rate-own-limit-exceeded',
        message:
          `a claim by process ${c.pid} (rateLimit { max: ${max}, duration: ${duration} }) at ${c.claimedAtMs} ` +
          `made ${inWindow.length} claims of all instances within its ${duration} ms`,
        claims: inWindow,
      });
    }
  }
  violations.push(...checkJobs(input, claims));
  const pids = [...fullest.keys()];
  return {
    violations,
    figures: {
      claims: claims.length,
      processes: pids.length,
      limitReachedBy: pids.filter((pid) => fullest.get(pid)! >= input.limitOf(pid).max).length,
      fullestAtClaim: Object.fromEntries(
        pids.map((pid) => [String(pid), `${fullest.get(pid)}/${input.limitOf(pid).max} per ${input.limitOf(pid).duration} ms`]),
      ),
    },
  };
}
