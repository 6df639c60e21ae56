import type { HistoryEvent, LockKind } from './history.js';

/**
 * The model-based checker of the soak: pure functions over a recorded history (tools/soak/history.ts)
 * that say which safety and liveness rules it breaks. It trusts only what the store recorded, in
 * the store's order (`seq`) and clock (`us`), never a worker's own verdict.
 *
 * Rules, per key:
 * - `fence-went-back`: an accepted fenced operation whose token is lower than one already accepted;
 * - `fence-repeated`: two holds accepted with the same token (only read holds of one read phase may share one);
 * - `fence-not-fresh`: a hold whose acquire began after another hold's release returned got a token
 *   not greater than that hold's (equal allowed only between read holds);
 * - `hold-token-changed`: one hold used two tokens for one key (re-entry must keep the token);
 * - `overlapping-holders`: two holds' accepted intervals (first to last accepted operation) overlap
 *   while one of them is exclusive (anything but a read hold);
 * - `lost-update`: an accepted counter write that is not the previous accepted write + 1;
 * - `two-holders-at-once`: the store refused a hold (a newer token got in) while the library still
 *   said that hold was held;
 * - `semaphore-over-occupancy`: more holds counted in than permits, counting only holds whose permit
 *   certainly had not ended yet;
 * and per job:
 * - `job-never-ran`: `schedule()` resolved, no handler run recorded;
 * - `job-ran-early`: a run began (Redis clock) before the job's due time (Redis clock at the start
 *   of `schedule()` + delay, or the `at` given);
 * - `job-phantom-run`: a run of a job no one scheduled;
 * - `job-dead-without-run`: dead-lettered and never run.
 */
export type ViolationRule =
  | 'fence-went-back'
  | 'fence-repeated'
  | 'fence-not-fresh'
  | 'hold-token-changed'
  | 'overlapping-holders'
  | 'lost-update'
  | 'two-holders-at-once'
  | 'semaphore-over-occupancy'
  | 'job-never-ran'
  | 'job-ran-early'
  | 'job-phantom-run'
  | 'job-dead-without-run';

export interface HistoryViolation {
  readonly rule: ViolationRule;
  readonly key?: string;
  readonly job?: string;
  readonly message: string;
  /** The events that show it (an excerpt of the history). */
  readonly events: readonly HistoryEvent[];
}

export interface CheckOptions {
  /** Permits of each semaphore key. */
  readonly permits: Readonly<Record<string, number>>;
  /** Ids in the dead-letter set at the end of the run. */
  readonly deadJobs?: readonly string[];
  /**
   * Whether every job scheduled must have run (false while the queue has not drained: then only
   * the safety rules apply).
   */
  readonly requireAllJobsRan?: boolean;
}

export interface KindFigures {
  holds: number;
  acquireFailed: number;
  acceptedWrites: number;
  refusedByFence: number;
}

export interface HistoryFigures {
  events: number;
  byKind: Record<LockKind, KindFigures>;
  semaphore: { enters: number; refusedExpired: number; maxOccupancy: number };
  jobs: { scheduled: number; scheduleFailed: number; ran: number; runs: number; duplicates: number; dead: number };
}

export interface CheckResult {
  readonly violations: HistoryViolation[];
  readonly figures: HistoryFigures;
}

const FENCED_OPS = new Set(['enter', 'write', 'leave']);

const isShared = (kind: LockKind | undefined) => kind === 'read';

function compareTokens(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Checks a whole history (any order: it is sorted by `seq` first). */
export function checkHistory(history: readonly HistoryEvent[], options: CheckOptions): CheckResult {
  const events = [...history].sort((a, b) => a.seq - b.seq);
  const violations: HistoryViolation[] = [];
  const figures = emptyFigures(events.length);
  violations.push(...checkFencedKeys(events, figures));
  violations.push(...checkFreshTokens(events));
  violations.push(...checkHeldChecks(events));
  violations.push(...checkSemaphores(events, options.permits, figures));
  violations.push(...checkJobs(events, options, figures));
  return { violations, figures };
}

function emptyFigures(events: number): HistoryFigures {
  const byKind = {} as Record<LockKind, KindFigures>;
  for (const kind of ['plain', 'reentrant', 'fair', 'extend', 'multi', 'read', 'write', 'semaphore'] as const) {
    byKind[kind] = { holds: 0, acquireFailed: 0, acceptedWrites: 0, refusedByFence: 0 };
  }
  return {
    events,
    byKind,
    semaphore: { enters: 0, refusedExpired: 0, maxOccupancy: 0 },
    jobs: { scheduled: 0, scheduleFailed: 0, ran: 0, runs: 0, duplicates: 0, dead: 0 },
  };
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string | undefined): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    if (key === undefined) continue;
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

interface HoldOnKey {
  readonly hold: string;
  readonly kind: LockKind | undefined;
  token: string;
  first: HistoryEvent;
  last: HistoryEvent;
}

/** Fence order, token reuse, overlap and lost updates on the fenced rows (every kind but the semaphore). */
function checkFencedKeys(events: readonly HistoryEvent[], figures: HistoryFigures): HistoryViolation[] {
  const violations: HistoryViolation[] = [];
  const counted = new Set<string>();
  for (const event of events) {
    if (event.op === 'acquire-failed' && event.kind) figures.byKind[event.kind].acquireFailed++;
    if (event.hold && event.kind && event.token !== undefined && (FENCED_OPS.has(event.op) || event.op === 'sem-enter')) {
      if (!counted.has(event.hold)) {
        counted.add(event.hold);
        figures.byKind[event.kind].holds++;
      }
    }
  }
  const fenced = events.filter((e) => FENCED_OPS.has(e.op) && e.key !== undefined && e.token !== undefined && e.hold !== undefined);
  for (const [key, ops] of groupBy(fenced, (e) => e.key)) {
    let highest: HistoryEvent | undefined;
    let counter: HistoryEvent | undefined;
    const holds = new Map<string, HoldOnKey>();
    const tokenOwners = new Map<string, HoldOnKey>();
    for (const op of ops) {
      const token = op.token!;
      const hold = op.hold!;
      const known = holds.get(hold);
      if (known && known.token !== token) {
        violations.push({
          rule: 'hold-token-changed',
          key,
          message: `hold ${hold} used token ${known.token} and then ${token} on ${key}`,
          events: [known.first, op],
        });
      }
      if (!op.ok) {
        if (op.kind) figures.byKind[op.kind].refusedByFence++;
        continue;
      }
      if (highest && compareTokens(token, highest.token!) < 0) {
        violations.push({
          rule: 'fence-went-back',
          key,
          message: `${key}: token ${token} (hold ${hold}) accepted after token ${highest.token} (hold ${highest.hold})`,
          events: [highest, op],
        });
      }
      if (!highest || compareTokens(token, highest.token!) >= 0) highest = op;
      const owner = tokenOwners.get(token);
      if (owner && owner.hold !== hold && !(isShared(owner.kind) && isShared(op.kind))) {
        violations.push({
          rule: 'fence-repeated',
          key,
          message: `${key}: token ${token} given to hold ${owner.hold} (${owner.kind}) and to hold ${hold} (${op.kind})`,
          events: [owner.first, op],
        });
      }
      if (known) known.last = op;
      else {
        const entry: HoldOnKey = { hold, kind: op.kind, token, first: op, last: op };
        holds.set(hold, entry);
        if (!owner) tokenOwners.set(token, entry);
      }
      if (op.op === 'write') {
        if (op.kind) figures.byKind[op.kind].acceptedWrites++;
        const expected = (counter?.value ?? 0) + 1;
        if (op.value !== expected) {
          violations.push({
            rule: 'lost-update',
            key,
            message:
              `${key}: hold ${hold} wrote ${op.value} where ${expected} was due (the previous accepted write was ` +
              `${counter?.value ?? 'none'})`,
            events: counter ? [counter, op] : [op],
          });
        }
        counter = op;
      }
    }
    violations.push(...overlaps(key, [...holds.values()]));
  }
  return violations;
}

/**
 * Accepted intervals [first, last] that overlap while one side is exclusive: one violation per hold
 * that others got into, naming the first of them and how many there were.
 */
function overlaps(key: string, holds: HoldOnKey[]): HistoryViolation[] {
  const found = new Map<HoldOnKey, HoldOnKey[]>();
  const sorted = [...holds].sort((a, b) => a.first.seq - b.first.seq);
  let open: HoldOnKey[] = [];
  for (const hold of sorted) {
    open = open.filter((other) => other.last.seq > hold.first.seq);
    for (const other of open) {
      if (isShared(other.kind) && isShared(hold.kind)) continue;
      const inside = found.get(other);
      if (inside) inside.push(hold);
      else found.set(other, [hold]);
    }
    open.push(hold);
  }
  return [...found].map(([other, inside]) => ({
    rule: 'overlapping-holders' as const,
    key,
    message:
      `${key}: hold ${inside[0].hold} (${inside[0].kind}, token ${inside[0].token}) was accepted at ` +
      `seq ${inside[0].first.seq}, inside hold ` +
      `${other.hold} (${other.kind}, token ${other.token}) accepted from seq ${other.first.seq} to ${other.last.seq}` +
      (inside.length > 1 ? `, and ${inside.length - 1} more hold(s) after it` : ''),
    events: [other.first, inside[0].first, other.last],
  }));
}

/** A hold whose acquire began after another's release returned must get a newer token. */
function checkFreshTokens(events: readonly HistoryEvent[]): HistoryViolation[] {
  const violations: HistoryViolation[] = [];
  /** Per key: the highest token of a released hold, and whether only read holds had it. */
  const released = new Map<string, { token: string; shared: boolean; event: HistoryEvent }>();
  /** Per hold and key: what had been released when its acquire began. */
  const before = new Map<
    string,
    { kind: LockKind | undefined; snapshot: Map<string, { token: string; shared: boolean; event: HistoryEvent }> }
  >();
  const checked = new Set<string>();
  const tokensOf = (event: HistoryEvent): Array<[string, string]> => {
    if (event.key !== undefined && event.token !== undefined) return [[event.key, event.token]];
    if (event.keys && event.token !== undefined) {
      const tokens = event.token.split(',');
      return event.keys.map((key, i) => [key, tokens[i]] as [string, string]).filter(([, t]) => t !== undefined && t !== '');
    }
    return [];
  };
  for (const event of events) {
    if (!event.hold) continue;
    if (event.op === 'acquire-invoke') {
      const snapshot = new Map<string, { token: string; shared: boolean; event: HistoryEvent }>();
      for (const key of event.keys ?? (event.key ? [event.key] : [])) {
        const r = released.get(key);
        if (r) snapshot.set(key, r);
      }
      before.set(event.hold, { kind: event.kind, snapshot });
      continue;
    }
    for (const [key, token] of tokensOf(event)) {
      const id = `${event.hold}\n${key}`;
      const start = before.get(event.hold);
      if (!checked.has(id) && start) {
        checked.add(id);
        const prior = start.snapshot.get(key);
        if (prior) {
          const order = compareTokens(token, prior.token);
          const fresh = order > 0 || (order === 0 && prior.shared && isShared(start.kind));
          if (!fresh) {
            violations.push({
              rule: 'fence-not-fresh',
              key,
              message:
                `${key}: hold ${event.hold} (${start.kind}) got token ${token}, not newer than token ${prior.token} ` +
                `of hold ${prior.event.hold}, released before it asked`,
              events: [prior.event, event],
            });
          }
        }
      }
      if (event.op === 'release') {
        const current = released.get(key);
        const order = current ? compareTokens(token, current.token) : 1;
        if (order > 0) released.set(key, { token, shared: isShared(event.kind), event });
        else if (order === 0 && current && !isShared(event.kind)) released.set(key, { ...current, shared: false });
      }
    }
  }
  return violations;
}

/** A refused hold that the library still said it held: someone got a newer token during its lease. */
function checkHeldChecks(events: readonly HistoryEvent[]): HistoryViolation[] {
  const violations: HistoryViolation[] = [];
  const lastRefusal = new Map<string, HistoryEvent>();
  for (const event of events) {
    if (!event.hold) continue;
    if (FENCED_OPS.has(event.op) && !event.ok) lastRefusal.set(event.hold, event);
    if (event.op === 'held-check' && event.held === true) {
      const refusal = lastRefusal.get(event.hold);
      violations.push({
        rule: 'two-holders-at-once',
        key: event.key ?? refusal?.key,
        message:
          `hold ${event.hold} (${event.kind}, token ${event.token ?? refusal?.token}) was refused by the fence ` +
          `on ${refusal?.key ?? event.key} ` +
          `(a newer token ${refusal?.seen ?? '?'} got in) while the library still said it held the lock`,
        events: refusal ? [refusal, event] : [event],
      });
    }
  }
  return violations;
}

/** At most `permits` holds counted in at once, counting only holds whose permit had not certainly ended. */
function checkSemaphores(
  events: readonly HistoryEvent[],
  permits: Readonly<Record<string, number>>,
  figures: HistoryFigures,
): HistoryViolation[] {
  const violations: HistoryViolation[] = [];
  const semaphoreEvents = events.filter(
    (e) => (e.op === 'sem-enter' || e.op === 'sem-leave') && e.key !== undefined && e.hold !== undefined,
  );
  for (const [key, ops] of groupBy(semaphoreEvents, (e) => e.key)) {
    const limit = permits[key];
    if (limit === undefined) throw new Error(`history-checker: no permit count given for semaphore ${key}`);
    const inside = new Map<string, HistoryEvent>();
    const tokenOwners = new Map<string, HistoryEvent>();
    for (const op of ops) {
      if (op.op === 'sem-leave') {
        inside.delete(op.hold!);
        continue;
      }
      if (!op.ok) {
        figures.semaphore.refusedExpired++;
        continue;
      }
      figures.semaphore.enters++;
      if (op.token !== undefined) {
        const owner = tokenOwners.get(op.token);
        if (owner && owner.hold !== op.hold) {
          violations.push({
            rule: 'fence-repeated',
            key,
            message: `${key}: permit token ${op.token} given to hold ${owner.hold} and to hold ${op.hold}`,
            events: [owner, op],
          });
        } else if (!owner) tokenOwners.set(op.token, op);
      }
      const nowMs = Math.floor(op.us / 1000);
      for (const [hold, entered] of inside) {
        if ((entered.endsAtMs ?? 0) <= nowMs) inside.delete(hold);
      }
      inside.set(op.hold!, op);
      figures.semaphore.maxOccupancy = Math.max(figures.semaphore.maxOccupancy, inside.size);
      if (inside.size > limit) {
        violations.push({
          rule: 'semaphore-over-occupancy',
          key,
          message: `${key}: ${inside.size} holds inside a ${limit}-permit semaphore at seq ${op.seq} (${[...inside.keys()].join(', ')})`,
          events: [...inside.values()],
        });
      }
    }
  }
  return violations;
}

/** Every job whose schedule() resolved ran at least once, none before it was due, none out of nowhere. */
function checkJobs(events: readonly HistoryEvent[], options: CheckOptions, figures: HistoryFigures): HistoryViolation[] {
  const violations: HistoryViolation[] = [];
  const invoked = new Map<string, HistoryEvent>();
  const scheduled = new Map<string, HistoryEvent>();
  const runs = new Map<string, HistoryEvent[]>();
  for (const event of events) {
    if (event.job === undefined) continue;
    if (event.op === 'schedule-invoke') invoked.set(event.job, event);
    else if (event.op === 'scheduled') scheduled.set(event.job, event);
    else if (event.op === 'schedule-failed') figures.jobs.scheduleFailed++;
    else if (event.op === 'run') {
      const list = runs.get(event.job);
      if (list) list.push(event);
      else runs.set(event.job, [event]);
    }
  }
  figures.jobs.scheduled = scheduled.size;
  for (const [job, list] of runs) {
    figures.jobs.runs += list.length;
    figures.jobs.duplicates += list.length - 1;
    if (scheduled.has(job)) figures.jobs.ran++;
    const invoke = invoked.get(job);
    if (!invoke) {
      violations.push({ rule: 'job-phantom-run', job, message: `job ${job} ran but no schedule() of it was recorded`, events: list });
      continue;
    }
    const dueUs = dueMicros(invoke);
    for (const run of list) {
      if (run.us < dueUs) {
        violations.push({
          rule: 'job-ran-early',
          job,
          message: `job ${job} began at ${run.us} µs, ${((dueUs - run.us) / 1000).toFixed(3)} ms before it was due (${dueUs} µs)`,
          events: [invoke, run],
        });
      }
    }
  }
  if (options.requireAllJobsRan !== false) {
    for (const [job, event] of scheduled) {
      if (!runs.has(job))
        violations.push({
          rule: 'job-never-ran',
          job,
          message: `job ${job} was scheduled and never ran`,
          events: [invoked.get(job) ?? event, event],
        });
    }
  }
  for (const job of options.deadJobs ?? []) {
    figures.jobs.dead++;
    if (!runs.has(job)) {
      const trail = [invoked.get(job), scheduled.get(job)].filter((e): e is HistoryEvent => e !== undefined);
      violations.push({ rule: 'job-dead-without-run', job, message: `job ${job} was dead-lettered without ever running`, events: trail });
    }
  }
  return violations;
}

/**
 * The earliest moment (Redis clock, µs) a job may start: `at`, or the Redis clock when
 * `schedule()` was called (whole ms, as the library counts) + delay. The library reads its clock
 * later than that, so this bound is never later than the real due time.
 */
export function dueMicros(invoke: HistoryEvent): number {
  if (invoke.atMs !== undefined) return invoke.atMs * 1000;
  return (Math.floor(invoke.us / 1000) + (invoke.delayMs ?? 0)) * 1000;
}

/** One line per violation with its history excerpt, for a report. */
export function describeViolations(violations: readonly HistoryViolation[], limit = 20): string {
  return violations
    .slice(0, limit)
    .map((v) => `${v.rule}: ${v.message}\n${v.events.map((e) => `    ${JSON.stringify(e)}`).join('\n')}`)
    .join('\n');
}
