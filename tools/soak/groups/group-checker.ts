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
 *   kill, of any of its deliveries, so a job waiting for its retry or for its redelivery after a kill
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
 */

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
}

/** When a delivery stopped running: its end, else its kill, else never. */
export function endOf(d: GroupDelivery): number {
  return d.endM ?? d.killedM ?? Number.POSITIVE_INFINITY;
}

const byToken = (a: GroupDelivery, b: GroupDelivery) => (BigInt(a.token) < BigInt(b.token) ? -1 : BigInt(a.token) > BigInt(b.token) ? 1 : 0);

export function checkGroupHistory(input: GroupCheckInput): { violations: GroupViolation[]; figures: GroupFigures } {
  const violations: GroupViolation[] = [];
  const flag = (rule: string, message: string, deliveries: readonly GroupDelivery[] = []) => violations.push({ rule, message, deliveries });
  const jobs = new Map(input.scheduled.map((s) => [s.job, s]));
  const deliveriesOf = new Map<string, GroupDelivery[]>();
  for (const d of input.deliveries) {
    const planned = jobs.get(d.job);
    if (!planned) flag('phantom-delivery', `job ${d.job} ran but was never scheduled`, [d]);
    else if (d.group !== planned.group) flag('wrong-group', `job ${d.job} of group ${planned.group} ran with JobContext.group ${String(d.group)}`, [d]);
    if (d.endM === undefined && d.killedM === undefined) flag('unended-delivery', `a delivery of ${d.job} neither ended nor was killed`, [d]);
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
  };

  const groups = new Map<string, ScheduledGroupJob[]>();
  for (const s of input.scheduled) groups.set(s.group, [...(groups.get(s.group) ?? []), s]);
  for (const [group, members] of groups) {
    members.sort((a, b) => a.seq - b.seq);
    const ran = members.filter((m) => deliveriesOf.has(m.job));
    checkOverlaps(group, ran.flatMap((m) => deliveriesOf.get(m.job)!), input.groupConcurrency, flag, figures);
    checkOrder(group, ran, deliveriesOf, input.groupConcurrency, flag);
  }

  for (const s of jobs.values()) {
    const handled = (deliveriesOf.get(s.job) ?? []).some((d) => d.outcome === 'ok');
    const dead = input.dead.has(s.job);
    if (handled) figures.handled++;
    if (dead) figures.dead++;
    if (dead && !s.failsAlways) flag('dead-unexpectedly', `job ${s.job} (group ${s.group}, #${s.seq}) was to succeed but is in the dead letters`, deliveriesOf.get(s.job) ?? []);
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
    const running = sorted.filter((o) => o.startM <= d.startM && endOf(o) > d.startM);
    const jobsRunning = new Set(running.map((o) => o.job));
    figures.maxRunningInAGroup = Math.max(figures.maxRunningInAGroup, jobsRunning.size);
    for (const o of running) {
      if (o === d || o.job !== d.job) continue;
      const [earlier] = [o, d].sort(byToken);
      if (earlier.outcome === 'lost') figures.excusedOverlaps++;
      else flag('same-job-overlap', `two deliveries of job ${d.job} (group ${group}) ran at once, the earlier not told its visibility was lost`, [o, d]);
    }
    if (jobsRunning.size > limit) {
      flag('group-overlap', `${jobsRunning.size} jobs of group ${group} ran at once (limit ${limit})`, running);
    }
  }
}

/** (b): each job's claim and first start against the jobs before it in the group's order. */
function checkOrder(group: string, ran: readonly ScheduledGroupJob[], deliveriesOf: ReadonlyMap<string, GroupDelivery[]>, limit: number, flag: Flag): void {
  const firstStart = (job: string) => Math.min(...deliveriesOf.get(job)!.map((d) => d.startM));
  const lastCompletion = (job: string) => Math.max(...deliveriesOf.get(job)!.map(endOf));
  // A job's first claim, when its first delivery reached its handler (a claim cut by a kill before that is not seen).
  const firstClaim = (job: string) => deliveriesOf.get(job)!.find((d) => d.attempt === 1);
  for (let j = 1; j < ran.length; j++) {
    const t = firstStart(ran[j].job);
    const first = deliveriesOf.get(ran[j].job)!.find((d) => d.startM === t)!;
    const claimJ = firstClaim(ran[j].job);
    for (const i of ran.slice(0, j)) {
      const claimI = firstClaim(i.job);
      if (claimI && claimJ && byToken(claimJ, claimI) < 0) flag('group-order', `job #${ran[j].seq} of group ${group} was claimed before job #${i.seq}`, [claimJ, claimI]);
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
