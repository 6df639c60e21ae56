/**
 * The scheduled-work checker's judge: a pure function over the merged history (history-file.ts) and
 * what Redis holds at the end. Rules (a violation names its rule and the events that show it):
 *
 * Outbox jobs
 * - `rolled-back-ran`: a job whose transaction rolled back ran.
 * - `phantom-run`: a job ran that no transaction scheduled.
 * - `committed-not-run`: a job whose COMMIT resolved (or that the after-commit hook saw committed
 *   before it SIGKILLed its process) never ran. Not a violation, counted as `lostToDataLoss`, when
 *   Redis was restarted empty between the start of its transaction and 15 s after its commit (jobs
 *   already in Redis are lost then; the documented limit).
 * - `job-ran-twice`: in the order of its deliveries (fencing tokens), a job ran again with an
 *   attempt no greater than the earlier delivery's (the same delivery twice, or the job written to
 *   Redis a second time). Redis restarted empty between the
 *   two runs excuses it (the row's operation record was lost with the data): counted, not a violation.
 * - `redelivered-without-cause`: a job ran again as a later attempt although the earlier run
 *   finished within its visibility timeout and nothing stopped its consumer from acknowledging it.
 *   "Outlived its visibility" is detected as: the earlier run has no `run-end`, or ended more than
 *   the visibility timeout after it began, or began more than the visibility timeout after its
 *   delivery was claimed (its token is the Redis TIME at the claim: counted as `staleDeliveriesRun`),
 *   or a fault that can keep a consumer from confirming in time (its process killed, paused or its
 *   link stalled, a lost reply on its link, a Redis restart) overlapped the time from its claim to
 *   the visibility timeout after its end.
 * - `ran-early`: a job ran before its delay had passed since its transaction began (the row's due
 *   time is the database's clock at INSERT + delay; every process runs on this machine's clock).
 *   Ticks the same: a tick ran before its tick time.
 * Repeatable jobs
 * - `tick-ran-twice` / `tick-redelivered-without-cause`: the same rules per tick job
 *   (`repeat:<id>@<tick>`), with no excuse for data loss: a restored schedule starts after the
 *   server's now, so no tick that ran runs again.
 * - `removed-schedule-ticked`: after `removeRepeat()` outside a transaction resolved, a tick of that
 *   schedule due after the removal ran, before the next `repeat()` of that id was called. Not a
 *   violation, counted as `removalsUndoneByDataLoss`: Redis restarted empty between the removal and
 *   that tick, and an earlier `repeat()` of the id went through the outbox (NG-r: its row may be
 *   relayed again, and the removal was only in Redis); or Redis restarted empty within a minute of
 *   the removal and the remover's process was killed, paused or cut off between the removal and
 *   REMOVER_WINDOW_US after that restart (NG-rl: it could not record its removal again in time).
 * - `removed-schedule-present`: a schedule whose last change was a completed removal (direct or
 *   committed through the outbox) is in Redis at the end. Excused (counted the same way) on NG-rl's
 *   condition.
 * - `schedule-lost`: a schedule whose last change was a completed `repeat()` is missing at the end,
 *   though Redis was not restarted empty after it.
 * - `schedule-not-restored`: a fixed schedule (upserted by every worker) is missing at the end, or
 *   none of its ticks ran after the last fault ended.
 * - `phantom-tick`: a tick ran of a schedule nobody created.
 * @OnOneInstance and @LeaderElection
 * - `one-instance-overlap` / `two-leaders`: two terms (runs of `@OnOneInstance`, leadership terms),
 *   each the span from its first to its last observation in user code that saw the lock held and its
 *   signal live, overlap on the shared monotonic clock. A term of a paused process that sees itself
 *   still leading when it resumes is such an overlap. Not a violation, counted as
 *   `overlapsAfterDataLoss`: Redis restarted empty after the earlier term began (it forgot the lock)
 *   and the earlier holder stopped seeing itself holding within one ttl after Redis was back (the
 *   documented limit: a lost lock is noticed at the next renewal).
 * - `one-instance-tick-twice`: one tick of the instances' timers (the same number on every
 *   instance: a multiple of the period of the wall clock) ran on two instances. Not a violation,
 *   counted as `ticksTwiceAfterFault`: a pause, stall, kill or lost reply on one of them, or a Redis
 *   restart, within one ttl before the later run (the documented "a lost lease can still cost a
 *   double run").
 * - `one-instance-token-went-back` / `leader-token-went-back`: a later term has a smaller token.
 * - `phantom-leader-term`: `onLeadershipAcquired` ran for a term whose lease was found ended (a
 *   `LockLostError` in `onLeadershipLost`) within 100 ms: a fresh term has a whole ttl (1 s here)
 *   ahead of it, so the hooks ran for a term that never really began.
 * - `leader-lost-without-term`: `onLeadershipLost` ran for a term whose `onLeadershipAcquired` did not.
 */
import { FIXED_SCHEDULES, JOB_TOPIC, TICK_TOPIC } from './constants.js';
import type { SwEvent } from './history-file.js';

export interface SwViolation {
  readonly rule: string;
  readonly message: string;
  readonly events: readonly SwEvent[];
}

export interface SwCheckOptions {
  readonly visibilityMs: number;
  /** Lease (ttl) of the @OnOneInstance lease and the leader lock. */
  readonly leaseMs: number;
  /** Schedule ids in Redis at the end (`listRepeats`). */
  readonly presentAtEnd: ReadonlySet<string>;
}

export interface SwFigures {
  events: number;
  faults: Record<string, number>;
  jobs: {
    transactions: number;
    committed: number;
    killedAfterCommit: number;
    rolledBack: number;
    unknown: number;
    ran: number;
    runs: number;
    redeliveries: number;
    lostToDataLoss: number;
    ranTwiceAfterDataLoss: number;
    /** Runs whose handler began more than the visibility timeout after their delivery was claimed. */
    staleDeliveriesRun: number;
  };
  ticks: { runs: number; ticks: number; redeliveries: number; staleDeliveriesRun: number; bySchedule: Record<string, number> };
  churn: {
    repeats: number;
    removals: number;
    removalsViaOutbox: number;
    killedAfterCommit: number;
    removalsRacingTicks: number;
    removalsUndoneByDataLoss: number;
    failed: number;
  };
  oneInstance: { runs: number; observations: number; overlapsAfterDataLoss: number; ticksTwiceAfterFault: number };
  leader: {
    terms: number;
    observations: number;
    staleObservationsRefused: number;
    shortLeaseLostTerms: number;
    overlapsAfterDataLoss: number;
  };
}

export interface SwCheckResult {
  readonly violations: SwViolation[];
  readonly figures: SwFigures;
}

interface FaultWindow {
  readonly kind: string;
  readonly slot?: number;
  readonly startM: number;
  readonly endM: number;
  readonly startT: number;
  /** Begun and never ended in the history (an armed lost reply that never hit): it excuses, but does not move "after the last fault". */
  readonly open?: boolean;
}

/** Fault kinds that can keep a consumer from confirming its delivery in time, and whom they hit. */
const HITS_A_CONSUMER: Record<string, 'slot' | 'all'> = {
  kill: 'slot',
  'kill-after-commit': 'slot',
  pause: 'slot',
  stall: 'slot',
  'lost-reply': 'slot',
  'redis-aof': 'all',
  'redis-empty': 'all',
};

/** A committed job not run is excused when Redis was restarted empty this soon after its COMMIT (it may have been in Redis then). */
export const DATA_LOSS_WINDOW_US = 15_000_000;

/**
 * Whether Redis restarted empty may have taken a committed job with it: a restart that began after
 * its transaction began (the after-commit write can land before COMMIT returns) and at most
 * DATA_LOSS_WINDOW_US after its COMMIT returned.
 */
export function lostWithRedisData(
  beginM: number,
  committedM: number,
  emptyRestarts: ReadonlyArray<{ startM: number; endM: number }>,
): boolean {
  return emptyRestarts.some((f) => f.endM >= beginM && f.startM <= committedM + DATA_LOSS_WINDOW_US);
}

/** Clock reading slack of the early-run rule (ms): the Redis and database clocks are read in whole ms. */
const EARLY_MARGIN_MS = 5;

/** Faults that stop a remover's process from recording its removal again (NG-rl). */
const REMOVER_FAULTS = new Set(['kill', 'kill-after-commit', 'pause', 'stall']);
/**
 * How long after Redis restarted empty a remover must be able to record its removal again (µs): a
 * missing schedule is restored from 6 s after an instance first finds it missing, which is at most
 * one 5 s check after the restart.
 */
const REMOVER_WINDOW_US = 11_000_000;

const slotOf = (w: string) => Number(/^w(\d+)\./.exec(w)?.[1] ?? -1);
const bigger = (a: string, b: string) => BigInt(a) > BigInt(b);

export function checkScheduledWork(events: readonly SwEvent[], options: SwCheckOptions): SwCheckResult {
  const history = [...events].sort((a, b) => a.m - b.m);
  const violations: SwViolation[] = [];
  const violate = (rule: string, message: string, evidence: readonly SwEvent[]) => violations.push({ rule, message, events: evidence });
  const visibilityUs = options.visibilityMs * 1000;

  // Faults as windows on the monotonic clock.
  const faults: FaultWindow[] = [];
  const faultCounts: Record<string, number> = {};
  const open = new Map<string, SwEvent>();
  for (const e of history) {
    if (e.op !== 'fault') continue;
    const key = `${e.kind}#${e.n}`;
    if (e.phase === 'start') open.set(key, e);
    else {
      const start = open.get(key) ?? e;
      open.delete(key);
      faults.push({ kind: e.kind!, slot: e.slot, startM: start.m, endM: e.m, startT: start.t });
      faultCounts[e.kind!] = (faultCounts[e.kind!] ?? 0) + 1;
    }
  }
  // A fault still open at the end (the run stopped mid-fault) lasts to the end.
  const lastM = history.at(-1)?.m ?? 0;
  for (const start of open.values())
    faults.push({ kind: start.kind!, slot: start.slot, startM: start.m, endM: lastM, startT: start.t, open: true });
  const emptyRestarts = faults.filter((f) => f.kind === 'redis-empty');
  /**
   * NG-rl: Redis lost its data within a minute of a removal made by `remover`, and that process was
   * killed, paused or cut off from the removal until REMOVER_WINDOW_US after the restart (a removal
   * the remover could not record again before another instance restored the schedule).
   */
  const removerLostRemoval = (remover: string, removedM: number) => {
    const slot = slotOf(remover);
    return emptyRestarts.some(
      (r) =>
        r.startM >= removedM &&
        r.startM <= removedM + 60_000_000 &&
        faults.some((f) => REMOVER_FAULTS.has(f.kind) && f.slot === slot && f.endM >= removedM && f.startM <= r.endM + REMOVER_WINDOW_US),
    );
  };
  const emptyRestartBetween = (fromM: number, toM: number) => emptyRestarts.some((f) => f.endM >= fromM && f.startM <= toM);
  const hitBetween = (slot: number, fromM: number, toM: number) =>
    faults.some(
      (f) =>
        HITS_A_CONSUMER[f.kind] !== undefined &&
        (HITS_A_CONSUMER[f.kind] === 'all' || f.slot === slot) &&
        f.endM >= fromM &&
        f.startM <= toM,
    );

  // Runs by job id, with their ends.
  const runs = new Map<string, SwEvent[]>();
  const ends = new Map<string, SwEvent>();
  const runKey = (e: SwEvent) => `${e.w}|${e.job}|${e.attempt}|${e.token}`;
  for (const e of history) {
    if (e.op === 'run') {
      let list = runs.get(e.job!);
      if (!list) runs.set(e.job!, (list = []));
      list.push(e);
    } else if (e.op === 'run-end') ends.set(runKey(e), e);
  }

  /**
   * When the delivery a run belongs to was claimed, on the monotonic clock: its fencing token is
   * max(counter + 1, the Redis TIME in µs at the claim), so token / 1000 is no earlier than the claim.
   */
  const claimedM = (run: SwEvent) => run.m - Math.max(0, run.t - Number(BigInt(run.token!) / 1000n)) * 1000;
  /** The run began more than the visibility timeout after its delivery was claimed (its consumer was paused or cut off meanwhile). */
  const startedStale = (run: SwEvent) => run.m - claimedM(run) > visibilityUs;

  /**
   * Judges the runs of one job id, in the order of their deliveries (fencing tokens grow with every
   * delivery of a job): a later delivery must be a later attempt, and is excused only when the
   * earlier delivery's consumer could not confirm it within its visibility timeout.
   */
  const judgeRuns = (
    id: string,
    list: readonly SwEvent[],
    tick: boolean,
  ): { redeliveries: number; afterDataLoss: number; stale: number } => {
    const byDelivery = [...list].sort((a, b) =>
      BigInt(a.token!) < BigInt(b.token!) ? -1 : BigInt(a.token!) > BigInt(b.token!) ? 1 : a.m - b.m,
    );
    let redeliveries = 0;
    let afterDataLoss = 0;
    const stale = list.filter(startedStale).length;
    for (let i = 1; i < byDelivery.length; i++) {
      const prev = byDelivery[i - 1];
      const next = byDelivery[i];
      if (next.attempt! <= prev.attempt!) {
        if (!tick && emptyRestartBetween(Math.min(prev.m, next.m), Math.max(prev.m, next.m))) {
          afterDataLoss++;
          continue;
        }
        violate(
          tick ? 'tick-ran-twice' : 'job-ran-twice',
          `${id} ran as attempt ${prev.attempt} (${prev.w}, token ${prev.token}) and again as attempt ${next.attempt} ` +
            `(${next.w}, token ${next.token})`,
          [prev, next],
        );
        continue;
      }
      const end = ends.get(runKey(prev));
      const outlived =
        end === undefined ||
        end.m - prev.m > visibilityUs ||
        startedStale(prev) ||
        hitBetween(slotOf(prev.w), claimedM(prev), (end?.m ?? prev.m) + visibilityUs);
      if (outlived) redeliveries++;
      else {
        violate(
          tick ? 'tick-redelivered-without-cause' : 'redelivered-without-cause',
          `${id}: attempt ${prev.attempt} on ${prev.w} began ${Math.round((prev.m - claimedM(prev)) / 1000)} ` +
            `ms after its claim and ended ${Math.round((end.m - prev.m) / 1000)} ms later with no fault on it, ` +
            `yet attempt ${next.attempt} ran on ${next.w}`,
          [prev, end, next],
        );
      }
    }
    return { redeliveries, afterDataLoss, stale };
  };

  // ---- Outbox jobs ----
  const txBegin = new Map<string, SwEvent>();
  const outcome = new Map<string, SwEvent>();
  for (const e of history) {
    if (e.op === 'tx-begin') txBegin.set(e.job!, e);
    else if (e.op === 'committed' || e.op === 'rolled-back' || e.op === 'tx-failed') {
      if (!outcome.has(e.job!) || e.op === 'committed') outcome.set(e.job!, e);
    }
  }
  const jobs: SwFigures['jobs'] = {
    transactions: txBegin.size,
    committed: 0,
    killedAfterCommit: 0,
    rolledBack: 0,
    unknown: 0,
    ran: 0,
    runs: 0,
    redeliveries: 0,
    lostToDataLoss: 0,
    ranTwiceAfterDataLoss: 0,
    staleDeliveriesRun: 0,
  };
  for (const [job, begin] of txBegin) {
    const result = outcome.get(job);
    const jobRuns = runs.get(job) ?? [];
    if (result?.op === 'committed') {
      jobs.committed++;
      if (result.killed) jobs.killedAfterCommit++;
      if (jobRuns.length === 0) {
        if (lostWithRedisData(begin.m, result.m, emptyRestarts)) jobs.lostToDataLoss++;
        else
          violate(
            'committed-not-run',
            `${job} committed${result.killed ? ' (its process SIGKILLed right after COMMIT)' : ''} and never ran`,
            [begin, result],
          );
      }
    } else if (result?.op === 'rolled-back') {
      jobs.rolledBack++;
      if (jobRuns.length > 0)
        violate('rolled-back-ran', `${job} rolled back, yet ran ${jobRuns.length} time(s)`, [begin, result, ...jobRuns.slice(0, 2)]);
    } else jobs.unknown++;
  }
  for (const [job, list] of runs) {
    if (list[0].topic !== JOB_TOPIC) continue;
    jobs.runs += list.length;
    const begin = txBegin.get(job);
    const early = begin?.delay === undefined ? undefined : list.find((r) => r.t < begin.t + begin.delay! - EARLY_MARGIN_MS);
    if (early)
      violate(
        'ran-early',
        `${job} ran ${begin!.t + begin!.delay! - early.t} ms before its delay of ${begin!.delay} ms had passed since its transaction began`,
        [begin!, early],
      );
    if (!txBegin.has(job)) {
      violate('phantom-run', `${job} ran but no transaction scheduled it`, list.slice(0, 2));
      continue;
    }
    jobs.ran++;
    const judged = judgeRuns(job, list, false);
    jobs.redeliveries += judged.redeliveries;
    jobs.ranTwiceAfterDataLoss += judged.afterDataLoss;
    jobs.staleDeliveriesRun += judged.stale;
  }

  // ---- Repeatable jobs ----
  const ticks: SwFigures['ticks'] = { runs: 0, ticks: 0, redeliveries: 0, staleDeliveriesRun: 0, bySchedule: {} };
  const tickRuns = new Map<string, Array<{ tickMs: number; e: SwEvent }>>();
  for (const [job, list] of runs) {
    if (list[0].topic !== TICK_TOPIC) continue;
    const match = /^repeat:(.+)@(\d+)$/s.exec(job);
    if (!match) {
      violate('phantom-tick', `${job} ran on the tick topic but is not a tick job`, list.slice(0, 2));
      continue;
    }
    const [, scheduleId, tickMs] = match;
    const early = list.find((r) => r.t < Number(tickMs) - EARLY_MARGIN_MS);
    if (early) violate('ran-early', `${job} ran ${Number(tickMs) - early.t} ms before its tick time`, [early]);
    ticks.runs += list.length;
    ticks.ticks++;
    ticks.bySchedule[scheduleId] = (ticks.bySchedule[scheduleId] ?? 0) + 1;
    let byId = tickRuns.get(scheduleId);
    if (!byId) tickRuns.set(scheduleId, (byId = []));
    byId.push({ tickMs: Number(tickMs), e: list[0] });
    const judged = judgeRuns(job, list, true);
    ticks.redeliveries += judged.redeliveries;
    ticks.staleDeliveriesRun += judged.stale;
  }

  const churnOps = new Map<string, SwEvent[]>();
  const churn: SwFigures['churn'] = {
    repeats: 0,
    removals: 0,
    removalsViaOutbox: 0,
    killedAfterCommit: 0,
    removalsRacingTicks: 0,
    removalsUndoneByDataLoss: 0,
    failed: 0,
  };
  for (const e of history) {
    if (!['repeat-invoke', 'repeat-done', 'remove-invoke', 'remove-done', 'churn-failed'].includes(e.op)) continue;
    let list = churnOps.get(e.id!);
    if (!list) churnOps.set(e.id!, (list = []));
    list.push(e);
    if (e.op === 'repeat-done') churn.repeats++;
    if (e.op === 'remove-done') {
      churn.removals++;
      if (e.via === 'tx') churn.removalsViaOutbox++;
    }
    if (e.killed) churn.killedAfterCommit++;
    if (e.op === 'churn-failed') churn.failed++;
  }
  const fixedIds = new Set(FIXED_SCHEDULES.map((s) => s.id));
  for (const [scheduleId, list] of tickRuns) {
    if (!fixedIds.has(scheduleId) && !churnOps.has(scheduleId))
      violate('phantom-tick', `ticks of ${scheduleId} ran but nobody created it`, [list[0].e]);
  }
  for (const [id, ops] of churnOps) {
    const idTicks = tickRuns.get(id) ?? [];
    for (const [i, op] of ops.entries()) {
      if (op.op !== 'remove-done' || op.killed) continue;
      const nextRepeat = ops.slice(i + 1).find((o) => o.op === 'repeat-invoke');
      const invoke = ops
        .slice(0, i)
        .reverse()
        .find((o) => o.op === 'remove-invoke');
      if (idTicks.some(({ e }) => Math.abs(e.m - (invoke?.m ?? op.m)) <= 250_000 || (invoke && e.m >= invoke.m && e.m <= op.m)))
        churn.removalsRacingTicks++;
      if (op.via !== 'direct') continue;
      const late = idTicks.filter(
        ({ tickMs, e }) => tickMs > op.t + 20 && e.m > op.m && (nextRepeat === undefined || tickMs < nextRepeat.t),
      );
      // NG-r (docs/guarantees.md): a removal outside a transaction lives only in Redis; an earlier
      // transactional repeat() of the id whose outbox row outlived its write (its instance killed
      // before the row's DELETE) is relayed again after Redis lost its data, and nothing remembers
      // the removal then.
      const undoneByDataLoss =
        late.length > 0 &&
        ((ops.slice(0, i).some((o) => o.op === 'repeat-done' && o.via === 'tx') &&
          emptyRestarts.some((f) => f.startM >= op.m && f.endM <= late[0].e.m)) ||
          removerLostRemoval(op.w!, op.m));
      if (undoneByDataLoss) churn.removalsUndoneByDataLoss++;
      else if (late.length > 0) {
        violate(
          'removed-schedule-ticked',
          `${id}: removeRepeat() resolved at ${op.t}, then tick ${late[0].tickMs} ran (${late.length} tick(s) of the removed schedule)`,
          [op, ...late.slice(0, 3).map((l) => l.e)],
        );
      }
    }
    const last = ops.at(-1)!;
    if (last.op === 'remove-done' && options.presentAtEnd.has(id) && !last.killed && removerLostRemoval(last.w!, last.m))
      churn.removalsUndoneByDataLoss++;
    else if (last.op === 'remove-done' && options.presentAtEnd.has(id)) {
      violate(
        'removed-schedule-present',
        `${id}: its last change, a removal${last.via === 'tx' ? ' committed through the outbox' : ''}, completed, ` +
          `yet the schedule is in Redis at the end`,
        [last],
      );
    }
    if (last.op === 'repeat-done' && !options.presentAtEnd.has(id) && !emptyRestarts.some((f) => f.endM >= last.m)) {
      violate(
        'schedule-lost',
        `${id}: its last change, repeat()${last.via === 'tx' ? ' committed through the outbox' : ''}, completed, ` +
          `yet the schedule is missing at the end`,
        [last],
      );
    }
  }
  const lastFaultEndT = faults.filter((f) => !f.open).reduce((t, f) => Math.max(t, f.startT + (f.endM - f.startM) / 1000), 0);
  for (const { id } of FIXED_SCHEDULES) {
    const after = (tickRuns.get(id) ?? []).filter((r) => r.tickMs > lastFaultEndT);
    if (!options.presentAtEnd.has(id) || after.length === 0) {
      violate(
        'schedule-not-restored',
        `${id}: ${options.presentAtEnd.has(id) ? 'in Redis at the end' : 'missing at the end'}, ${after.length} ` +
          `tick(s) ran after the last fault`,
        history.filter((e) => e.op === 'fault' && e.kind === 'redis-empty').slice(-2),
      );
    }
  }

  // ---- @OnOneInstance and @LeaderElection ----
  const terms = (op: 'one-obs' | 'leader-obs', also?: 'leader-acquired') => {
    const byTerm = new Map<string, { w: string; token: string; first: SwEvent; last: SwEvent; observations: number }>();
    let refused = 0;
    for (const e of history) {
      if (e.op !== op && e.op !== also) continue;
      if (!e.valid) {
        if (e.op === op) refused++;
        continue;
      }
      const key = `${e.w}|${e.token}`;
      const term = byTerm.get(key);
      if (!term) byTerm.set(key, { w: e.w, token: e.token!, first: e, last: e, observations: 1 });
      else {
        term.last = e;
        term.observations++;
      }
    }
    return { terms: [...byTerm.values()].sort((a, b) => a.first.m - b.first.m), refused };
  };
  const judgeTerms = (list: ReturnType<typeof terms>['terms'], overlapRule: string, tokenRule: string, what: string) => {
    // `reach`: the term whose last valid observation is the latest so far; `previous`: the term begun last.
    let reach: (typeof list)[number] | undefined;
    let previous: (typeof list)[number] | undefined;
    let reported: (typeof list)[number] | undefined;
    for (const term of list) {
      // One violation per term that outlived its successor's start (not one per later term it overlaps).
      if (reach && reach !== reported && term.first.m <= reach.last.m) {
        reported = reach;
        const earlier = reach;
        // Redis restarted empty forgot the lock: the holder learns it at its next renewal (ttl / 3), within one ttl.
        const forgotten = emptyRestarts.some(
          (f) => f.startM >= earlier.first.m && f.startM <= term.first.m && earlier.last.m <= f.endM + options.leaseMs * 1000,
        );
        if (forgotten) overlapsAfterDataLoss[overlapRule] = (overlapsAfterDataLoss[overlapRule] ?? 0) + 1;
        else
          violate(
            overlapRule,
            `${what}: ${reach.w} (token ${reach.token}) still saw itself ` +
              `holding ${Math.round((reach.last.m - term.first.m) / 1000)} ms after ${term.w} (token ${term.token}) began`,
            [reach.first, term.first, reach.last],
          );
      }
      if (previous && !bigger(term.token, previous.token)) {
        violate(tokenRule, `${what}: ${term.w}'s term (token ${term.token}) began after ${previous.w}'s (token ${previous.token})`, [
          previous.first,
          term.first,
        ]);
      }
      previous = term;
      if (!reach || term.last.m > reach.last.m) reach = term;
    }
  };
  const overlapsAfterDataLoss: Record<string, number> = {};
  const one = terms('one-obs');
  judgeTerms(one.terms, 'one-instance-overlap', 'one-instance-token-went-back', '@OnOneInstance');
  const leaders = terms('leader-obs', 'leader-acquired');
  judgeTerms(leaders.terms, 'two-leaders', 'leader-token-went-back', '@LeaderElection');
  // Each tick of the @OnOneInstance timers on one instance.
  let ticksTwiceAfterFault = 0;
  const firstRunOfTick = new Map<number, SwEvent>();
  for (const term of one.terms) {
    const n = term.first.n!;
    const earlier = firstRunOfTick.get(n);
    if (!earlier) {
      firstRunOfTick.set(n, term.first);
      continue;
    }
    if (earlier.w === term.first.w && earlier.token === term.first.token) continue;
    const from = term.first.m - options.leaseMs * 1000;
    const excused = [slotOf(earlier.w), slotOf(term.first.w)].some((slot) => hitBetween(slot, from, term.first.m));
    if (excused) ticksTwiceAfterFault++;
    else
      violate(
        'one-instance-tick-twice',
        `@OnOneInstance tick ${n} ran on ${earlier.w} (token ${earlier.token}) and on ${term.first.w} (token ${term.first.token})`,
        [earlier, term.first],
      );
  }

  let shortLeaseLostTerms = 0;
  const acquiredAt = new Map<string, SwEvent>();
  for (const e of history) {
    if (e.op === 'leader-acquired') acquiredAt.set(`${e.w}|${e.token}`, e);
    if (e.op === 'leader-lost') {
      const began = acquiredAt.get(`${e.w}|${e.token}`);
      if (!began)
        violate('leader-lost-without-term', `${e.w}: onLeadershipLost ran for token ${e.token}, whose onLeadershipAcquired did not`, [e]);
      else if (e.m - began.m < 100_000 && /LockLost/.test(e.reason ?? '')) {
        shortLeaseLostTerms++;
        violate(
          'phantom-leader-term',
          `${e.w}: became leader (token ${e.token}) and lost it ${((e.m - began.m) / 1000).toFixed(1)} ms later: ${e.reason}`,
          [began, e],
        );
      }
    }
  }

  return {
    violations,
    figures: {
      events: history.length,
      faults: faultCounts,
      jobs,
      ticks,
      churn,
      oneInstance: {
        runs: one.terms.length,
        observations: one.terms.reduce((n, t) => n + t.observations, 0),
        overlapsAfterDataLoss: overlapsAfterDataLoss['one-instance-overlap'] ?? 0,
        ticksTwiceAfterFault,
      },
      leader: {
        terms: history.filter((e) => e.op === 'leader-acquired').length,
        observations: leaders.terms.reduce((n, t) => n + t.observations, 0),
        staleObservationsRefused: leaders.refused,
        shortLeaseLostTerms,
        overlapsAfterDataLoss: overlapsAfterDataLoss['two-leaders'] ?? 0,
      },
    },
  };
}

export function describeSwViolations(violations: readonly SwViolation[], limit = 20): string {
  const byRule = new Map<string, number>();
  for (const v of violations) byRule.set(v.rule, (byRule.get(v.rule) ?? 0) + 1);
  const lines = [`${violations.length} violation(s): ${[...byRule].map(([r, n]) => `${r} ${n}`).join(', ')}`];
  for (const v of violations.slice(0, limit)) {
    lines.push(`- ${v.rule}: ${v.message}`);
    for (const e of v.events) lines.push(`    ${JSON.stringify(e)}`);
  }
  return lines.join('\n');
}
