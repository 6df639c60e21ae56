/**
 * The job-groups checker's judge: a pure function over a recorded history of group deliveries
 * (test/faults/groups-checker.spec.ts records it; the rules are unit-tested in
 * test/unit/group-checker.spec.ts). Every time is CLOCK_MONOTONIC in µs, shared by every process
 * of the machine. A delivery runs from its handler's start to its handler's end, or, when its
 * process was SIGKILLed while it ran, to the moment the SIGKILL was sent (the process runs no more
 * code after that).
 *
 * Rules (a violation names its rule and the deliveries that show it):
 * - `group-overlap`: more than `groupConcurrency` jobs of one group ran at one instant. The one
 *   excuse, the at-least-once case: a delivery whose handler saw its `signal` aborted because its
 *   visibility was lost (`outcome: 'lost'`: its consumer stalled or was cut off past the visibility
 *   timeout) may overlap a LATER delivery OF THE SAME JOB (its redelivery); the two count as one
 *   job. Nothing else is excused: a killed delivery ends when its process was killed, which is before
 *   its visibility passes, so it may overlap nothing; a lost delivery may not overlap another job.
 * - `same-job-overlap`: two deliveries of one job overlap, but for the excuse above.
 * - `group-order`: jobs numbered by `seq` (the group's due order, equal due times in schedule
 *   order): a job j was claimed before a job i < j (the fencing tokens of their first deliveries, when
 *   both reached a handler: tokens grow with every claim on the topic), or, at the first start of j,
 *   `groupConcurrency` jobs i < j had not completed for good: a job completes at the latest end, or
 *   kill, of any of its deliveries (for a handler that read its signal aborted, its last live read:
 *   see `acted-after-takeover`), so a job waiting for its retry or for its redelivery after a kill
 *   keeps its turn, and a dead-lettered job completes with its last delivery. (Such a job i was out
 *   when j was claimed: claimed before it, and acknowledged or buried only after that completion.)
 *   With `groupConcurrency` 1: job j starts after every earlier job of the group completed for good.
 *   Handler starts are not compared across jobs: with `groupConcurrency` > 1, two jobs claimed in
 *   order by two processes may begin their handlers in either order.
 * - `job-lost`: a scheduled job was neither handled (a delivery ended `ok`) nor dead at the end.
 *   Not a violation, counted as `lostToDataLoss`, when its scheduling began before the end of a
 *   Redis restart without its data (the documented limit): (a) and (b) still apply to what ran.
 * - `dead-unexpectedly`: a job that was to succeed is in the dead letters (a job over a limit or
 *   blocked by its group must wait, not fail).
 * - `unended-delivery`: a delivery has neither an end nor a kill (it counts as running for ever).
 * - `phantom-delivery` / `wrong-group`: a delivery of a job never scheduled, or whose
 *   `JobContext.group` is not the group it was scheduled in.
 *
 * Rules of the consumer-faults run (test/faults/consumer-faults-checker.spec.ts; each applies only
 * when the input carries what it needs):
 * - `acted-after-takeover`: a handler that reads its `job.signal` between steps of work (worker.ts,
 *   SIGNAL_POLL) records its last read that found the signal live (`lastLiveM`; the end, when it
 *   finished without reading an abort) and its first read that found it aborted. Such a delivery
 *   acts from its start to `lastLiveM` and no further. It may not act after another delivery of the
 *   same job with a greater token started, nor (`groupConcurrency` 1) after a later job of its group
 *   started: a delivery taken over (its process SIGSTOPped past its visibility, then SIGCONTed) must
 *   read its signal aborted at its first read after it resumed. For such deliveries the overlap
 *   rules above use that live interval, and the excuse of a lost delivery no longer applies: it
 *   read its abort, so it has to have stopped acting before the other started.
 * - `attempt-without-run`: a delivery's attempt is greater than one plus the deliveries of its job
 *   seen before it (token order): an attempt was spent by a claim whose handler never began. Only a
 *   consumer fault that can take a job with it (a SIGKILL, or a SIGSTOP past the visibility timeout:
 *   `consumerFaults`) between the job's scheduling and that delivery's start excuses it. A link cut
 *   shorter than the visibility timeout does not: jobs a consumer took but did not start go back
 *   with their attempt undone.
 * - `dead-visibility-timeout`: a job in the dead letters for a visibility timeout ("Visibility
 *   timeout passed ... on the last attempt", `deadReasons`), with no consumer fault between its
 *   scheduling and the moment it was first seen dead (`deadSeenM`; else the end of its last delivery). With `maxAttempts: 1`
 *   a buffered job dropped by its consumer goes there without ever running.
 * - `started-while-paused`: a handler started more than PAUSE_START_GRACE_MS after `pause()`
 *   resolved and before `resume()` was sent (`pauses`). The consumer learns of the pause at its next
 *   claim: a job it had already claimed (in its prefetch buffer) can still start, within the buffer's
 *   hold (250 ms after its claim, then it is handed back); the grace adds 150 ms for a loaded
 *   machine's timers and the claim reply's trip.
 * - `claimed-while-paused`: a delivery's `JobContext.claimedAt` (Redis clock, ms) is after `pause()`
 *   resolved (the wall clock then, ms) and before `resume()` was sent: no claim while paused. Redis
 *   runs on this machine's clock, and a claim the pause preceded in Redis cannot answer a job.
 */

/** See `started-while-paused`: the prefetch buffer's hold (250 ms) plus 150 ms of slack. */
export const PAUSE_START_GRACE_MS = 400;

/** The reason the claim script gives a job buried for a visibility timeout on its last attempt. */
const VISIBILITY_DEATH = /visibility timeout passed/i;

/** One handler run of a job of a group. */
export interface GroupDelivery {
  readonly job: string;
  /** `JobContext.group` as the handler saw it. */
  readonly group: string | undefined;
  readonly attempt: number;
  /** The delivery's fencing token: deliveries of one job in claim order. */
  readonly token: string;
  readonly pid: number;
  readonly startM: number;
  /** When the handler returned or threw; absent when it was cut by a kill. */
  readonly endM?: number;
  /** ok: returned; failed: threw; lost: returned after its signal aborted (visibility lost). */
  readonly outcome?: 'ok' | 'failed' | 'lost';
  /** When its process was sent SIGKILL, when that happened before the handler ended. */
  readonly killedM?: number;
  /** `JobContext.claimedAt` (Redis clock, ms). */
  readonly claimedAtMs?: number;
  /** A handler reading its signal between steps: its last read that found it live (or its end, when it read no abort). */
  readonly lastLiveM?: number;
  /** A handler reading its signal between steps: its first read that found it aborted. */
  readonly abortSeenM?: number;
}

/** One scheduled job: its group, its place in the group's due order, and whether it was to succeed. */
export interface ScheduledGroupJob {
  readonly job: string;
  readonly group: string;
  readonly seq: number;
  /** When its `schedule()` call began. */
  readonly scheduledM: number;
  /** Its handler always throws, so it must end in the dead letters. */
  readonly failsAlways: boolean;
}

export interface GroupCheckInput {
  readonly scheduled: readonly ScheduledGroupJob[];
  readonly deliveries: readonly GroupDelivery[];
  /** Job ids in the dead letters at the end. */
  readonly dead: ReadonlySet<string>;
  readonly groupConcurrency: number;
  /** Redis restarts that lost the data (monotonic µs from the kill to the restarted server). */
  readonly emptyRestarts: ReadonlyArray<{ readonly startM: number; readonly endM: number }>;
  /**
   * Consumer faults that may spend an attempt without a handler start (a SIGKILL: startM = endM; a
   * SIGSTOP past the visibility timeout: its window). Given, `attempt-without-run` and
   * `dead-visibility-timeout` are judged.
   */
  readonly consumerFaults?: ReadonlyArray<{ readonly startM: number; readonly endM: number }>;
  /** The dead jobs' `lastError`, for `dead-visibility-timeout`. */
  readonly deadReasons?: ReadonlyMap<string, string | undefined>;
  /** Topic pauses: when `pause()` resolved (monotonic µs, wall ms) and `resume()` was sent. */
  readonly pauses?: ReadonlyArray<PauseWindow>;
  /** When the recorder first saw each dead job in the dead letters (monotonic µs): the end of its excuse window. */
  readonly deadSeenM?: ReadonlyMap<string, number>;
}

/** One `pause()` ... `resume()` of the topic, as the producer saw it. */
export interface PauseWindow {
  readonly resolvedM: number;
  readonly resolvedWallMs: number;
  readonly resumeSentM: number;
  readonly resumeSentWallMs: number;
}

export interface GroupViolation {
  readonly rule: string;
  readonly message: string;
  readonly deliveries: readonly GroupDelivery[];
}

export interface GroupFigures {
  jobs: number;
  groups: number;
  deliveries: number;
  handled: number;
  dead: number;
  redeliveries: number;
  cutByKill: number;
  visibilityLost: number;
  excusedOverlaps: number;
  lostToDataLoss: number;
  /** Most jobs of one group seen running at once. */
  maxRunningInAGroup: number;
  /** Deliveries whose handler read its signal aborted (handlers reading their signal). */
  abortsRead: number;
  /** Deliveries that started after a `pause()` resolved, before its `resume()` (a prefetched job may). */
  startedAfterPause: number;
  /** The latest such start after its `pause()` resolved, ms. */
  latestStartAfterPauseMs: number;
}

/** When a delivery stopped running: its end, else its kill, else never. */
export function endOf(d: GroupDelivery): number {
  return d.endM ?? d.killedM ?? Number.POSITIVE_INFINITY;
}

/** Whether the delivery's handler read its signal between steps (see `acted-after-takeover`). */
const readsSignal = (d: GroupDelivery) => d.lastLiveM !== undefined || d.abortSeenM !== undefined;

/**
 * When a delivery stopped acting: for a handler that read its signal aborted, its last read that
 * found it live (its start, if none did); otherwise when it stopped running (`endOf`).
 */
export function liveEndOf(d: GroupDelivery): number {
  return d.abortSeenM !== undefined ? (d.lastLiveM ?? d.startM) : endOf(d);
}

const byToken = (a: GroupDelivery, b: GroupDelivery) =>
  BigInt(a.token) < BigInt(b.token) ? -1 : BigInt(a.token) > BigInt(b.token) ? 1 : 0;

export function checkGroupHistory(input: GroupCheckInput): { violations: GroupViolation[]; figures: GroupFigures } {
  const violations: GroupViolation[] = [];
  const flag = (rule: string, message: string, deliveries: readonly GroupDelivery[] = []) => violations.push({ rule, message, deliveries });
  const jobs = new Map(input.scheduled.map((s) => [s.job, s]));
  const deliveriesOf = new Map<string, GroupDelivery[]>();
  for (const d of input.deliveries) {
    const planned = jobs.get(d.job);
    if (!planned) flag('phantom-delivery', `job ${d.job} ran but was never scheduled`, [d]);
    else if (d.group !== planned.group)
      flag('wrong-group', `job ${d.job} of group ${planned.group} ran with JobContext.group ${String(d.group)}`, [d]);
    if (d.endM === undefined && d.killedM === undefined)
      flag('unended-delivery', `a delivery of ${d.job} neither ended nor was killed`, [d]);
    deliveriesOf.set(d.job, [...(deliveriesOf.get(d.job) ?? []), d]);
  }
  for (const list of deliveriesOf.values()) list.sort(byToken);

  const figures: GroupFigures = {
    jobs: jobs.size,
    groups: new Set(input.scheduled.map((s) => s.group)).size,
    deliveries: input.deliveries.length,
    handled: 0,
    dead: 0,
    redeliveries: input.deliveries.filter((d) => d.attempt > 1).length,
    cutByKill: input.deliveries.filter((d) => d.endM === undefined && d.killedM !== undefined).length,
    visibilityLost: input.deliveries.filter((d) => d.outcome === 'lost').length,
    excusedOverlaps: 0,
    lostToDataLoss: 0,
    maxRunningInAGroup: 0,
    abortsRead: input.deliveries.filter((d) => d.abortSeenM !== undefined).length,
    startedAfterPause: 0,
    latestStartAfterPauseMs: 0,
  };

  const groups = new Map<string, ScheduledGroupJob[]>();
  for (const s of input.scheduled) groups.set(s.group, [...(groups.get(s.group) ?? []), s]);
  for (const [group, members] of groups) {
    members.sort((a, b) => a.seq - b.seq);
    const ran = members.filter((m) => deliveriesOf.has(m.job));
    checkOverlaps(
      group,
      ran.flatMap((m) => deliveriesOf.get(m.job)!),
      input.groupConcurrency,
      flag,
      figures,
    );
    checkOrder(group, ran, deliveriesOf, input.groupConcurrency, flag);
    checkActedAfterTakeover(group, ran, deliveriesOf, input.groupConcurrency, flag);
  }
  if (input.consumerFaults) checkAttempts(input, jobs, deliveriesOf, input.consumerFaults, flag);
  for (const pause of input.pauses ?? []) checkPause(pause, input.deliveries, flag, figures);

  for (const s of jobs.values()) {
    const handled = (deliveriesOf.get(s.job) ?? []).some((d) => d.outcome === 'ok');
    const dead = input.dead.has(s.job);
    if (handled) figures.handled++;
    if (dead) figures.dead++;
    if (dead && !s.failsAlways)
      flag(
        'dead-unexpectedly',
        `job ${s.job} (group ${s.group}, #${s.seq}) was to succeed but is in the dead letters`,
        deliveriesOf.get(s.job) ?? [],
      );
    if (handled || dead) continue;
    if (input.emptyRestarts.some((r) => s.scheduledM < r.endM)) figures.lostToDataLoss++;
    else flag('job-lost', `job ${s.job} (group ${s.group}, #${s.seq}) was neither handled nor dead`, deliveriesOf.get(s.job) ?? []);
  }
  return { violations, figures };
}

type Flag = (rule: string, message: string, deliveries: readonly GroupDelivery[]) => void;

/** (a): at every delivery's start, the deliveries of the group running then, as jobs (see the excuse). */
function checkOverlaps(group: string, deliveries: readonly GroupDelivery[], limit: number, flag: Flag, figures: GroupFigures): void {
  const sorted = [...deliveries].sort((a, b) => a.startM - b.startM);
  for (const d of sorted) {
    // A handler that read its signal aborted acted only until its last live read (liveEndOf).
    const running = sorted.filter((o) => o.startM <= d.startM && liveEndOf(o) > d.startM);
    const jobsRunning = new Set(running.map((o) => o.job));
    figures.maxRunningInAGroup = Math.max(figures.maxRunningInAGroup, jobsRunning.size);
    for (const o of running) {
      if (o === d || o.job !== d.job) continue;
      const [earlier] = [o, d].sort(byToken);
      // A handler reading its signal has its own rule (acted-after-takeover), with no excuse.
      if (readsSignal(earlier)) continue;
      if (earlier.outcome === 'lost') figures.excusedOverlaps++;
      else
        flag(
          'same-job-overlap',
          `two deliveries of job ${d.job} (group ${group}) ran at once, the earlier not told its visibility was lost`,
          [o, d],
        );
    }
    if (jobsRunning.size > limit) {
      flag('group-overlap', `${jobsRunning.size} jobs of group ${group} ran at once (limit ${limit})`, running);
    }
  }
}

/** (b): each job's claim and first start against the jobs before it in the group's order. */
function checkOrder(
  group: string,
  ran: readonly ScheduledGroupJob[],
  deliveriesOf: ReadonlyMap<string, GroupDelivery[]>,
  limit: number,
  flag: Flag,
): void {
  const firstStart = (job: string) => Math.min(...deliveriesOf.get(job)!.map((d) => d.startM));
  // A handler that read its signal aborted stopped acting at its last live read (liveEndOf).
  const lastCompletion = (job: string) => Math.max(...deliveriesOf.get(job)!.map(liveEndOf));
  // A job's first claim, when its first delivery reached its handler (a claim cut by a kill before that is not seen).
  const firstClaim = (job: string) => deliveriesOf.get(job)!.find((d) => d.attempt === 1);
  for (let j = 1; j < ran.length; j++) {
    const t = firstStart(ran[j].job);
    const first = deliveriesOf.get(ran[j].job)!.find((d) => d.startM === t)!;
    const claimJ = firstClaim(ran[j].job);
    for (const i of ran.slice(0, j)) {
      const claimI = firstClaim(i.job);
      if (claimI && claimJ && byToken(claimJ, claimI) < 0)
        flag('group-order', `job #${ran[j].seq} of group ${group} was claimed before job #${i.seq}`, [claimJ, claimI]);
    }
    // Claimed in order, a job i < j not complete at j's start was out when j was claimed.
    const out = ran.slice(0, j).filter((i) => lastCompletion(i.job) >= t);
    if (out.length >= limit) {
      flag(
        'group-order',
        `job #${ran[j].seq} of group ${group} started while ${out.map((i) => `#${i.seq}`).join(', ')} had not completed (limit ${limit})`,
        [first, ...out.flatMap((i) => deliveriesOf.get(i.job)!)],
      );
    }
  }
}

/** `acted-after-takeover`: a handler reading its signal acted after a later delivery of its job, or (limit 1) a later job of its group,
 * started. */
function checkActedAfterTakeover(
  group: string,
  ran: readonly ScheduledGroupJob[],
  deliveriesOf: ReadonlyMap<string, GroupDelivery[]>,
  limit: number,
  flag: Flag,
): void {
  for (const [index, member] of ran.entries()) {
    for (const d of deliveriesOf.get(member.job)!) {
      if (!readsSignal(d)) continue;
      const actedUntil = liveEndOf(d);
      const laterOfJob = deliveriesOf.get(member.job)!.filter((o) => byToken(o, d) > 0);
      const laterOfGroup = limit === 1 ? ran.slice(index + 1).flatMap((m) => deliveriesOf.get(m.job)!) : [];
      const takeover = [...laterOfJob, ...laterOfGroup].filter((o) => o.startM < actedUntil).sort((a, b) => a.startM - b.startM)[0];
      if (!takeover) continue;
      const what = takeover.job === d.job ? `its redelivery (attempt ${takeover.attempt})` : `job ${takeover.job} of its group`;
      const read =
        d.abortSeenM === undefined
          ? `finished normally ${ms(actedUntil - takeover.startM)} after`
          : `read its signal live ${ms(actedUntil - takeover.startM)} after`;
      flag('acted-after-takeover', `a delivery of job ${d.job} (group ${group}, attempt ${d.attempt}) ${read} ${what} started`, [
        d,
        takeover,
      ]);
    }
  }
}

/** `attempt-without-run` and `dead-visibility-timeout` (see the rules). */
function checkAttempts(
  input: GroupCheckInput,
  jobs: ReadonlyMap<string, ScheduledGroupJob>,
  deliveriesOf: ReadonlyMap<string, GroupDelivery[]>,
  faults: ReadonlyArray<{ readonly startM: number; readonly endM: number }>,
  flag: Flag,
): void {
  const excused = (fromM: number, toM: number) => faults.some((f) => f.startM <= toM && f.endM >= fromM);
  for (const s of jobs.values()) {
    const mine = deliveriesOf.get(s.job) ?? [];
    for (const [seen, d] of mine.entries()) {
      if (d.attempt > seen + 1 && !excused(s.scheduledM, d.startM)) {
        flag(
          'attempt-without-run',
          `job ${s.job} (group ${s.group}) ran as attempt ${d.attempt} after ${seen} handler run(s), and no consumer was killed or stopped`,
          mine,
        );
      }
    }
    const reason = input.deadReasons?.get(s.job);
    if (input.dead.has(s.job) && reason !== undefined && VISIBILITY_DEATH.test(reason)) {
      const lastRun =
        mine.length > 0 ? Math.max(...mine.map((d) => (Number.isFinite(endOf(d)) ? endOf(d) : d.startM))) : Number.POSITIVE_INFINITY;
      const until = input.deadSeenM?.get(s.job) ?? lastRun;
      if (!excused(s.scheduledM, until)) {
        flag(
          'dead-visibility-timeout',
          `job ${s.job} (group ${s.group}) is in the dead letters for a visibility timeout after ${mine.length} ` +
            `handler run(s), and no consumer was killed or stopped: "${reason}"`,
          mine,
        );
      }
    }
  }
}

/** `started-while-paused` and `claimed-while-paused` for one pause (see the rules). */
function checkPause(pause: PauseWindow, deliveries: readonly GroupDelivery[], flag: Flag, figures: GroupFigures): void {
  for (const d of deliveries) {
    if (d.startM > pause.resolvedM && d.startM < pause.resumeSentM) {
      figures.startedAfterPause++;
      figures.latestStartAfterPauseMs = Math.max(figures.latestStartAfterPauseMs, Math.round((d.startM - pause.resolvedM) / 1000));
      if (d.startM - pause.resolvedM > PAUSE_START_GRACE_MS * 1000) {
        flag(
          'started-while-paused',
          `job ${d.job} started ${ms(d.startM - pause.resolvedM)} after pause() resolved (at most ${PAUSE_START_GRACE_MS} ` +
            `ms), before resume()`,
          [d],
        );
      }
    }
    if (d.claimedAtMs !== undefined && d.claimedAtMs > pause.resolvedWallMs && d.claimedAtMs < pause.resumeSentWallMs) {
      flag(
        'claimed-while-paused',
        `job ${d.job} was claimed ${d.claimedAtMs - pause.resolvedWallMs} ms after pause() resolved, before resume() was sent`,
        [d],
      );
    }
  }
}

const ms = (us: number) => `${Math.round(us / 1000)} ms`;
