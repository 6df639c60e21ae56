/**
 * The dedupe checker's judge: a pure function over a recorded history of `scheduleWithResult(topic,
 * payload, { dedupe: { key, ttl, mode } })` calls and of the handler runs of their jobs
 * (test/faults/dedupe-checker.spec.ts records it; the rules are unit-tested in
 * test/unit/dedupe-checker.spec.ts).
 *
 * Clocks. A call is known by the wall-clock ms read just before it was sent and just after it
 * settled; the schedule script ran (its first run: a re-sent call answers from its operation record)
 * at some Redis `TIME` T in between. A run carries `JobContext.createdAt` (the T of the call that
 * stored the job: the throttle window's creator, or the debounce job's last call), `scheduledAt`
 * (its due ms) and `claimedAt`, on the Redis server clock. The run's Redis and Node share one host
 * clock, so T lies in [sent, answered] (for a call whose reply was dropped, [sent, the drop]) up to
 * ms truncation and Redis's per-command time snapshot; `toleranceMs` (the spec: 5) widens every
 * such bound. On separate hosts it would have to cover their clock skew too.
 *
 * Rules (a violation names its rule, the key and the calls and runs that show it):
 * - `call-failed`: a call rejected (a lost reply is re-sent, never surfaced).
 * - `wrong-status`: a throttle call answered other than `created`/`existing`, a debounce call other
 *   than `created`/`replaced`.
 * - `created-twice`: two calls answered `created` with one id.
 * - `answer-names-unknown-job`: an `existing`/`replaced` answer names a job no call of its key
 *   answered `created` (a re-sent call that made a job of its own, or a key pointing elsewhere).
 * - `run-without-call`: a run of a job no call answered `created` (e.g. a second job made by a
 *   re-sent call whose key had expired meanwhile).
 * - `job-lost`: a job some call created never ran; `job-ran-twice`: one ran more than once (the run's
 *   handlers never fail and no consumer is killed, so each job runs exactly once).
 * - `created-at`: a job's `createdAt` is outside the interval of the call that stored it: for
 *   throttle the creating call (the window starts at that call), for debounce one of its calls.
 * Throttle (one job per key per ttl, from the creating call, even after the job ran):
 * - `throttle-windows-overlap`: two jobs of one key created less than ttl apart (Redis times).
 * - `throttle-existing-outside-window`: an `existing` answer naming job J from a call sent after
 *   J's window closed (createdAt + ttl) or answered before it opened.
 * - `run-payload`: the run's payload is not its creating call's.
 * Calls whose interval straddles a window's end (the key expired while they were in flight) may
 * answer either way: they are excused by the bounds above and counted (`racedExpiry`).
 * Debounce (each call restarts the wait and replaces the payload; one run, ttl after the last call):
 * - `debounce-split`: two calls of a key whose Redis times are certainly less than ttl apart landed
 *   on different jobs. The earlier call's job was due no earlier than ttl after it, so it had not
 *   started when the later one ran and had to be replaced (a call lands on a new job only when the
 *   key's job has started).
 * - `debounce-not-replaced`: a call answered `created` while an earlier job of its key (one whose
 *   creating call had run before this call was sent) was certainly still waiting, never started: its
 *   first run (attempt 1) was claimed, on the Redis clock, after this call had run (+ tolerance). That
 *   job had to be replaced (a call lands on a new job only when the key's job is running, done, dead
 *   or waiting for a retry): debounce-split's complement for calls ttl or more apart (a due job that a
 *   busy consumer had not claimed yet). A call already reported by debounce-split with that job is not
 *   reported twice. A claim whose Redis time may lie within the call's interval raced it (either answer
 *   is right): excused and counted (`racedClaim`).
 * - `debounce-due`: a run's `scheduledAt` is not `createdAt + ttl` (due ttl after the last call).
 * - `debounce-early-run`: a run claimed before ttl after the sending of some call that landed on
 *   its job (every such call restarted the wait).
 * - `debounce-payload`: the run's payload is not that of a call landing on its job whose interval
 *   holds its `createdAt`: due time and payload come from one call, the last one Redis ran. When
 *   several calls' intervals hold that instant the run is judged against them all and counted
 *   (`payloadRaces`).
 * - `debounce-payload-not-last`: the call whose payload ran had run (was answered, or saw its reply
 *   dropped) before another call that landed on the same job was sent: that later call ran later in
 *   Redis and its payload had to win. A re-sent call whose re-run put its payload back fails this.
 */

export type DedupeMode = 'throttle' | 'debounce';

/** One `scheduleWithResult` call with a dedupe. */
export interface DedupeCall {
  /** Unique per call: also the payload the call carries. */
  readonly call: string;
  readonly instance: number;
  readonly key: string;
  readonly mode: DedupeMode;
  readonly ttl: number;
  /** Wall-clock ms read just before the call. */
  readonly sentMs: number;
  /** Wall-clock ms read just after it settled. */
  readonly answeredMs: number;
  readonly result?: { readonly id: string; readonly status: string };
  readonly error?: string;
  /** A reply of this call's script was dropped (the call was re-sent). */
  readonly lostReply?: boolean;
  /**
   * Wall-clock ms by which the call's script had run: when its dropped reply was seen (it then
   * answers from that first run). Narrows the call's interval to [sentMs, ranByMs].
   */
  readonly ranByMs?: number;
}

/** One handler run of a deduped job. */
export interface DedupeRun {
  readonly job: string;
  readonly key: string;
  /** The `call` of the call whose payload the handler got. */
  readonly payload: string;
  readonly attempt: number;
  /** `JobContext.createdAt`, `scheduledAt`, `claimedAt`: Redis clock, ms. */
  readonly createdAtMs: number;
  readonly scheduledAtMs: number;
  readonly claimedAtMs: number;
  /** Wall-clock ms when the handler returned. */
  readonly endedMs: number;
}

export interface DedupeCheckInput {
  readonly calls: readonly DedupeCall[];
  readonly runs: readonly DedupeRun[];
  /** Widens every comparison of a wall-clock time with a Redis time (see the file comment). */
  readonly toleranceMs: number;
}

export interface DedupeViolation {
  readonly rule: string;
  readonly key: string;
  readonly message: string;
  readonly calls: readonly DedupeCall[];
  readonly runs: readonly DedupeRun[];
}

export interface DedupeFigures {
  calls: number;
  statuses: Record<string, number>;
  keys: { throttle: number; debounce: number };
  instances: number;
  /** Throttle windows (jobs created) and those with at least one `existing` answer. */
  windows: number;
  windowsWithExisting: number;
  /** `existing` answers from calls sent after the named job's handler returned. */
  existingAfterRun: number;
  /** Throttle calls in flight while a window of their key closed (excused either way). */
  racedExpiry: number;
  /** Debounce jobs and the most calls that landed on one of them. */
  debounceJobs: number;
  mostCallsOnOneJob: number;
  /** Debounce runs whose last call raced another (several intervals hold its createdAt). */
  payloadRaces: number;
  /** Debounce calls answered `created` while an earlier job of their key was claimed (the claim raced the call). */
  racedClaim: number;
  /** Calls in flight at once with a call of the same key from another instance. */
  racingCalls: number;
  /** Calls whose reply was dropped and re-sent, by their answer. */
  lostReplies: Record<string, number>;
}

/** Judges the history; see the file comment for the rules. */
export function checkDedupeHistory(input: DedupeCheckInput): { violations: DedupeViolation[]; figures: DedupeFigures } {
  const violations: DedupeViolation[] = [];
  const figures = emptyFigures(input);
  const keys = [...new Set(input.calls.map((c) => c.key))];
  for (const key of keys) {
    const calls = input.calls.filter((c) => c.key === key);
    const runs = input.runs.filter((r) => r.key === key);
    const mode = calls[0].mode;
    figures.keys[mode]++;
    const jobs = commonRules(key, mode, calls, runs, input.toleranceMs, violations);
    if (mode === 'throttle') throttleRules(key, calls, jobs, input.toleranceMs, violations, figures);
    else debounceRules(key, calls, jobs, input.toleranceMs, violations, figures);
  }
  return { violations, figures };
}

/** A job of one key: the call that created it, every call that landed on it, its runs. */
interface KeyJob {
  readonly id: string;
  readonly creator: DedupeCall;
  readonly calls: DedupeCall[];
  readonly runs: DedupeRun[];
}

function emptyFigures(input: DedupeCheckInput): DedupeFigures {
  const statuses: Record<string, number> = {};
  const lostReplies: Record<string, number> = {};
  for (const c of input.calls) {
    const status = c.result?.status ?? 'failed';
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (c.lostReply) lostReplies[status] = (lostReplies[status] ?? 0) + 1;
  }
  const racingCalls = input.calls.filter((c) =>
    input.calls.some((o) => o.key === c.key && o.instance !== c.instance && o.sentMs <= c.answeredMs && c.sentMs <= o.answeredMs),
  ).length;
  return {
    calls: input.calls.length,
    statuses,
    keys: { throttle: 0, debounce: 0 },
    instances: new Set(input.calls.map((c) => c.instance)).size,
    windows: 0,
    windowsWithExisting: 0,
    existingAfterRun: 0,
    racedExpiry: 0,
    debounceJobs: 0,
    mostCallsOnOneJob: 0,
    payloadRaces: 0,
    racedClaim: 0,
    racingCalls,
    lostReplies,
  };
}

/** `call-failed` … `created-at` (the rules of both modes); returns the key's jobs by id. */
function commonRules(
  key: string,
  mode: DedupeMode,
  calls: readonly DedupeCall[],
  runs: readonly DedupeRun[],
  tol: number,
  violations: DedupeViolation[],
): Map<string, KeyJob> {
  const add = (rule: string, message: string, c: readonly DedupeCall[], r: readonly DedupeRun[] = []) =>
    violations.push({ rule, key, message: `key ${key} (${mode}): ${message}`, calls: c, runs: r });
  const allowed = mode === 'throttle' ? ['created', 'existing'] : ['created', 'replaced'];
  const jobs = new Map<string, KeyJob>();
  for (const c of calls) {
    if (!c.result) {
      add('call-failed', `call ${c.call} failed: ${c.error ?? 'no answer'}`, [c]);
      continue;
    }
    if (!allowed.includes(c.result.status)) add('wrong-status', `call ${c.call} answered ${c.result.status}`, [c]);
    if (c.result.status !== 'created') continue;
    const known = jobs.get(c.result.id);
    if (known) add('created-twice', `calls ${known.creator.call} and ${c.call} both created job ${c.result.id}`, [known.creator, c]);
    else jobs.set(c.result.id, { id: c.result.id, creator: c, calls: [], runs: [] });
  }
  for (const c of calls) {
    if (!c.result) continue;
    const job = jobs.get(c.result.id);
    if (job) job.calls.push(c);
    else if (c.result.status !== 'created')
      add('answer-names-unknown-job', `call ${c.call} answered ${c.result.status} ${c.result.id}`, [c]);
  }
  for (const r of runs) {
    const job = jobs.get(r.job);
    if (job) job.runs.push(r);
    else add('run-without-call', `job ${r.job} ran (payload ${r.payload}) though no call created it`, [], [r]);
  }
  for (const job of jobs.values()) {
    if (job.runs.length === 0) add('job-lost', `job ${job.id} never ran`, job.calls);
    if (job.runs.length > 1) add('job-ran-twice', `job ${job.id} ran ${job.runs.length} times`, job.calls, job.runs);
    const stores = mode === 'throttle' ? [job.creator] : job.calls;
    for (const r of job.runs) {
      if (!stores.some((c) => holds(c, r.createdAtMs, tol))) {
        add('created-at', `job ${job.id} was stored at ${r.createdAtMs}, by none of its calls`, stores, [r]);
      }
    }
  }
  return jobs;
}

/** The latest wall-clock ms at which call `c`'s script may have run (its first run, for a re-sent call). */
function ranBy(c: DedupeCall): number {
  return Math.min(c.answeredMs, c.ranByMs ?? Infinity);
}

/** Whether `at` (Redis ms) may be the instant call `c` ran. */
function holds(c: DedupeCall, at: number, tol: number): boolean {
  return c.sentMs - tol <= at && at <= ranBy(c) + tol;
}

function throttleRules(
  key: string,
  calls: readonly DedupeCall[],
  jobs: Map<string, KeyJob>,
  tol: number,
  violations: DedupeViolation[],
  figures: DedupeFigures,
): void {
  const add = (rule: string, message: string, c: readonly DedupeCall[], r: readonly DedupeRun[]) =>
    violations.push({ rule, key, message: `key ${key} (throttle): ${message}`, calls: c, runs: r });
  const ttl = calls[0].ttl;
  // A window opens at its job's createdAt (the creating call's T), known from its run.
  const windows = [...jobs.values()]
    .filter((job) => job.runs.length > 0)
    .map((job) => ({ job, from: job.runs[0].createdAtMs }))
    .sort((a, b) => a.from - b.from);
  figures.windows += jobs.size;
  for (let i = 1; i < windows.length; i++) {
    const [a, b] = [windows[i - 1], windows[i]];
    if (b.from - a.from < ttl - tol) {
      add(
        'throttle-windows-overlap',
        `jobs ${a.job.id} and ${b.job.id} were created ${b.from - a.from} ms apart (ttl ${ttl})`,
        [a.job.creator, b.job.creator],
        [...a.job.runs, ...b.job.runs],
      );
    }
  }
  for (const { job, from } of windows) {
    const existing = job.calls.filter((c) => c.result?.status === 'existing');
    if (existing.length > 0) figures.windowsWithExisting++;
    const ended = Math.min(...job.runs.map((r) => r.endedMs));
    figures.existingAfterRun += existing.filter((c) => c.sentMs > ended).length;
    for (const c of existing) {
      if (c.sentMs > from + ttl + tol || ranBy(c) < from - tol) {
        add(
          'throttle-existing-outside-window',
          `call ${c.call} (sent ${c.sentMs}, answered ${c.answeredMs}) answered existing ${job.id}, ` +
            `whose window is [${from}, ${from + ttl}]`,
          [job.creator, c],
          job.runs,
        );
      }
    }
    for (const r of job.runs) {
      if (r.payload !== job.creator.call) {
        add('run-payload', `job ${job.id} ran with ${r.payload}, created by ${job.creator.call}`, [job.creator], [r]);
      }
    }
  }
  const ends = windows.map((w) => w.from + ttl);
  figures.racedExpiry += calls.filter((c) => ends.some((end) => holds(c, end, tol))).length;
}

function debounceRules(
  key: string,
  calls: readonly DedupeCall[],
  jobs: Map<string, KeyJob>,
  tol: number,
  violations: DedupeViolation[],
  figures: DedupeFigures,
): void {
  const add = (rule: string, message: string, c: readonly DedupeCall[], r: readonly DedupeRun[]) =>
    violations.push({ rule, key, message: `key ${key} (debounce): ${message}`, calls: c, runs: r });
  const ttl = calls[0].ttl;
  figures.debounceJobs += jobs.size;
  const answered = calls.filter((c) => c.result && jobs.has(c.result.id));
  // Two calls whose T are certainly less than ttl apart land on one job.
  const split = new Set<string>();
  for (const [i, p] of answered.entries()) {
    for (const x of answered.slice(i + 1)) {
      if (p.result!.id === x.result!.id) continue;
      const farthest = Math.max(ranBy(x) - p.sentMs, ranBy(p) - x.sentMs) + 2 * tol;
      if (farthest < ttl) {
        split.add(`${p.call}\n${x.result!.id}`).add(`${x.call}\n${p.result!.id}`);
        add(
          'debounce-split',
          `calls ${p.call} and ${x.call}, less than ${farthest} ms apart (ttl ${ttl}), landed on jobs ${p.result!.id} and ${x.result!.id}`,
          [p, x],
          [],
        );
      }
    }
  }
  // A created call: every earlier job of the key was claimed (running, done or retried) before it ran.
  for (const x of answered.filter((c) => c.result!.status === 'created')) {
    for (const job of jobs.values()) {
      const first = job.runs.find((r) => r.attempt === 1);
      if (job.id === x.result!.id || !first || ranBy(job.creator) >= x.sentMs || split.has(`${x.call}\n${job.id}`)) continue;
      if (first.claimedAtMs < x.sentMs - tol) continue;
      if (first.claimedAtMs <= ranBy(x) + tol) {
        figures.racedClaim++;
        continue;
      }
      add(
        'debounce-not-replaced',
        `call ${x.call} (sent ${x.sentMs}, answered ${x.answeredMs}) created ${x.result!.id}, though the key's job ${job.id} ` +
          `(created by ${job.creator.call}) was first claimed only at ${first.claimedAtMs}: it had to be replaced`,
        [job.creator, x],
        [first],
      );
    }
  }
  for (const job of jobs.values()) {
    figures.mostCallsOnOneJob = Math.max(figures.mostCallsOnOneJob, job.calls.length);
    for (const r of job.runs) {
      if (r.scheduledAtMs !== r.createdAtMs + ttl) {
        add('debounce-due', `job ${job.id} was due at ${r.scheduledAtMs}, stored at ${r.createdAtMs} (ttl ${ttl})`, [], [r]);
      }
      const restarted = job.calls.filter((c) => r.claimedAtMs < c.sentMs + ttl - tol);
      if (restarted.length > 0) {
        add('debounce-early-run', `job ${job.id} was claimed at ${r.claimedAtMs}, before ttl ${ttl} after a call of it`, restarted, [r]);
      }
      const last = job.calls.filter((c) => holds(c, r.createdAtMs, tol));
      if (last.length > 1) figures.payloadRaces++;
      const winner = job.calls.find((c) => c.call === r.payload);
      if (!winner || !last.includes(winner)) {
        add('debounce-payload', `job ${job.id} ran with ${r.payload}, not the payload of the call stored at ${r.createdAtMs}`, last, [r]);
      }
      const later = winner ? job.calls.filter((c) => c.sentMs > ranBy(winner)) : [];
      if (later.length > 0) {
        add(
          'debounce-payload-not-last',
          `job ${job.id} ran with ${r.payload}, ran before ${later.map((c) => c.call).join(', ')} of the same job was sent`,
          [winner!, ...later],
          [r],
        );
      }
    }
  }
}
