import type { ScheduledJob } from '../../lib/delay-queue/interfaces/schedule-options.interface.js';
import { checkGroupHistory, type PauseWindow, type ScheduledGroupJob } from '../../tools/soak/groups/group-checker.js';
import type { WorkerJobPayload } from '../../tools/soak/groups/worker.js';
import { monotonicUs } from '../../tools/soak/scheduled-work/constants.js';
import type { WorkerFleet } from '../../tools/soak/groups/worker-fleet.js';
import { seededDraws } from '../../tools/soak/soak-constants.js';
import { uniquePrefix } from '../support/test-app.js';
import { holdsWithin, sleep, waitFor } from '../support/timing.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';
import { deadJobs, handledJobs, useProxiedWorkerFleet } from './support/proxied-worker-fleet.js';

/**
 * The randomized run of consumer faults (the rules: tools/soak/groups/group-checker.ts, its
 * "consumer-faults" part; unit-tested in test/unit/group-checker.spec.ts). Three consumer processes
 * of one topic of job groups, each through its own fault proxy, on a private redis-server, CONFIGURED
 * DIFFERENTLY: slots 0 and 1 with a long visibility timeout (40 s) and concurrency 1 and 1-2, slot 2
 * with a short one (2 s) and concurrency 2; each with its own random `keepCompleted.count` (slot 2
 * sometimes none). Every handler reads its `job.signal` every 20-50 ms and records what it read
 * (worker.ts, SIGNAL_POLL). Each worker also consumes a second topic (`burst`) with its own random
 * concurrency (50-400) and `keepCompleted.count` (20-200). Each round runs four phases, in a seeded
 * plan:
 *
 * A. Outages shorter than the visibility timeout while jobs sit in prefetch buffers: groups of short
 *    (0-5 ms: they make the consumer prefetch) and long (300-1000 ms) jobs, a third with
 *    `maxAttempts: 1`, due within 300 ms; when slot 0 or 1 starts a long job right after a short one
 *    (its buffer then holds the jobs claimed with it), its link is cut for 14-20 s, at most half the
 *    visibility timeout (connections refused, or silent then reset, or a stall that heals). Rules:
 *    `attempt-without-run`, `dead-visibility-timeout`, `dead-unexpectedly` (a `maxAttempts: 1` job
 *    lost from a buffer goes dead without running).
 * B. A consumer SIGSTOPped past its visibility timeout: slot 2 stopped twice, mid-job, for 2.6-3.6 s,
 *    then SIGCONTed, while groups of 150-500 ms jobs run. Rules: `acted-after-takeover` (its handler
 *    must read its signal aborted at its first read after it resumed), and the overlap and order
 *    rules on what each delivery did while its signal read live.
 * C. `pause()` while short jobs stream (prefetch buffers full), held 0.8-1.5 s, then `resume()`.
 *    Rules: `started-while-paused`, `claimed-while-paused`.
 * D. A burst of 3,000-5,000 jobs on `burst`; `stats('burst').completed` is sampled while it runs and
 *    read once every job ran and was acknowledged. Rules: `burst-job-lost` (each burst job ran) and
 *    `kept-over-count`: never more than the largest `keepCompleted.count` of the instances (each
 *    trims by its own; the topic has one shard), with no later idle consumer needed. The main
 *    topic's `completed` is judged the same way at the end.
 *
 * Every job of A-C must be handled or dead (`job-lost`), none dead but for a cause (`dead-*`).
 * CONSUMER_FAULTS_SEED=<n> replays a seed (the same configuration, plan and fault draws; the
 * interleaving still varies with timing). CONSUMER_FAULTS_ROUNDS=<n> runs n rounds (the soak: 1 in
 * `npm test`).
 */
const SEED = Number(process.env.CONSUMER_FAULTS_SEED ?? 20_261_201);
const ROUNDS = Math.max(1, Number(process.env.CONSUMER_FAULTS_ROUNDS ?? 1));
const TOPIC = 'cf';
const BURST = 'burst';
const LONG_VISIBILITY = 40_000;
const SHORT_VISIBILITY = 2_000;
/** Batches of phase A added, at most, when none of its long jobs started with claims waiting in a buffer. */
const EXTRA_OUTAGE_BATCHES = 4;
const QUIET = { scheduled: 0, due: 0, active: 0, grouped: 0, busyGroups: 0 };

type OutageMode = 'cut' | 'blackhole-heal' | 'blackhole-reset';

interface Planned {
  readonly entry: ScheduledJob<WorkerJobPayload>;
  readonly record: Omit<ScheduledGroupJob, 'scheduledM'>;
}

/** Active jobs read from Redis (each with its delivery number, `attempts`) and when the read was answered (monotonic µs). */
interface ClaimsRead {
  readonly deliveries: ReadonlyArray<{ readonly job: string; readonly attempt: number }>;
  readonly answeredM: number;
}

/**
 * The deliveries of `read` no handler had started by its answer: no start line of that job and attempt at or before
 * `answeredM` (a job whose handler returned but whose acknowledgement was still on its way has one). A handed-back
 * delivery's attempt is undone, so its next delivery has the same number (neither started); a retried job's earlier
 * deliveries have other numbers. Exact once every start line up to the read is in (it counts a line still on its way
 * as not started); a start between Redis running the read and its answer counts as started (an undercount).
 */
function notStarted(workers: WorkerFleet, read: ClaimsRead): number {
  return read.deliveries.filter((d) => !workers.starts.some((s) => s.job === d.job && s.attempt === d.attempt && s.m <= read.answeredM))
    .length;
}

describe(
  'consumer faults: buffered jobs, stopped consumers, pauses, bursts, instances configured differently ' + '(randomized, checked)',
  () => {
    const server = useLocalRedisServer();
    const fleets = useProxiedWorkerFleet();

    it(
      'hands back buffered jobs across short outages, aborts a resumed consumer’s signal, starts nothing ' +
        'while paused, and keeps completed jobs bounded',
      async () => {
        const { random, between } = seededDraws(SEED);
        const keyPrefix = uniquePrefix('cf');
        const log = (line: string) => process.stdout.write(`[consumer-faults-checker seed ${SEED}] ${line}\n`);

        // Instances configured differently.
        const config = [0, 1, 2].map((slot) => ({
          concurrency: slot === 2 ? 2 : between(1, slot === 0 ? 1 : 2),
          visibility: slot === 2 ? SHORT_VISIBILITY : LONG_VISIBILITY,
          keepCompleted: slot === 2 && random() < 0.5 ? undefined : between(5, 40),
          burstConcurrency: between(50, 400),
          burstKeep: between(20, 200),
        }));
        log(`instances ${JSON.stringify(config)}, ${ROUNDS} round(s) (replay: CONSUMER_FAULTS_SEED=${SEED})`);
        const env = (slot: number) => ({
          TOPIC,
          CONCURRENCY: String(config[slot].concurrency),
          VISIBILITY: String(config[slot].visibility),
          SIGNAL_POLL: '1',
          ...(config[slot].keepCompleted === undefined ? {} : { KEEP_COMPLETED: String(config[slot].keepCompleted) }),
          BURST_TOPIC: BURST,
          BURST_CONCURRENCY: String(config[slot].burstConcurrency),
          BURST_KEEP_COMPLETED: String(config[slot].burstKeep),
        });
        const { workers, proxies, queue } = await fleets.start({ redis: server.url, keyPrefix, env });

        const scheduled: ScheduledGroupJob[] = [];
        const workOf = new Map<string, number>();
        const schedule = async (jobs: readonly Planned[]) => {
          const scheduledM = monotonicUs();
          for (const { record, entry } of jobs) {
            scheduled.push({ ...record, scheduledM });
            workOf.set(record.job, entry.payload!.workMs);
          }
          await queue.scheduleMany(
            TOPIC,
            jobs.map((j) => j.entry),
          );
        };
        const handled = () => handledJobs(workers);
        let dead = new Set<string>();
        const deadSeenM = new Map<string, number>();
        const settle = async (phase: string, timeoutMs: number) => {
          const settled = async () => {
            dead = await deadJobs(queue, TOPIC);
            for (const id of dead) if (!deadSeenM.has(id)) deadSeenM.set(id, monotonicUs());
            const done = handled();
            return (
              scheduled.every((s) => done.has(s.job) || dead.has(s.job)) &&
              matches(await queue.stats(TOPIC), QUIET) &&
              workers.running === 0
            );
          };
          if (!(await holdsWithin(settled, timeoutMs, { every: 100 }))) {
            const done = handled();
            const left = scheduled.filter((s) => !done.has(s.job) && !dead.has(s.job)).map((s) => s.job);
            throw new Error(
              `consumer-faults checker, seed ${SEED}: job-lost: phase ${phase}: not handled nor dead after ${timeoutMs} ` +
                `ms (or the topic not quiet): ${left.join(' ')}\n${JSON.stringify(await queue.stats(TOPIC))}`,
            );
          }
        };

        // Faults, recorded for the judge and the figures.
        const outages: Array<{
          slot: number;
          mode: OutageMode;
          ms: number;
          startM: number;
          endM?: number;
          longJob: string;
          /** The claims read just before the cut (or just after it, for a cut made anyway). */
          read?: ClaimsRead;
          /** Of those, the deliveries that had not started when Redis answered (set once phase A settled). */
          claimedNotRunning: number;
        }> = [];
        const pauses: PauseWindow[] = [];
        const keptSamples: Array<{ completed: number; atM: number }> = [];
        const burstLost: string[] = [];
        const lastEnd = new Map<number, { m: number; short: boolean }>();
        const lastStart = new Map<number, { m: number; short: boolean }>();
        workers.onEnd = (end, worker) => lastEnd.set(worker.pid, { m: end.m, short: (workOf.get(end.job) ?? 0) < 100 });

        for (let round = 0; round < ROUNDS; round++) {
          // --- A: outages shorter than the visibility timeout, with jobs in prefetch buffers.
          // Mostly outages proper (refused, or silent then reset); a fifth stalls and heals (held bytes delivered).
          const drawMode = (): OutageMode => {
            const draw = random();
            return draw < 0.5 ? 'cut' : draw < 0.8 ? 'blackhole-reset' : 'blackhole-heal';
          };
          const outagePlan = [0, 1].map(() => ({ mode: drawMode(), ms: between(14_000, 20_000) }));
          const pendingOutages: Array<Promise<void>> = [];
          let checkingBuffers = false;
          /** The claims of slots 0-1 (visible for the long timeout), or of every slot (`longOnly` false). */
          const readClaims = async (longOnly = true): Promise<ClaimsRead> => {
            const { jobs } = await queue.list(TOPIC, { state: 'active', limit: 1_000 });
            const answeredM = monotonicUs();
            const now = Date.now();
            const held = jobs.filter((j) => !longOnly || (j.visibleUntil?.getTime() ?? 0) - now > LONG_VISIBILITY / 2);
            return { deliveries: held.map((j) => ({ job: j.id, attempt: j.attempts })), answeredM };
          };
          const openOutageOn = (slot: number) => outages.some((o) => o.slot === slot && o.endM === undefined);
          /**
           * `claimedNotRunning`: claims held by the long-visibility consumers (slots 0 and 1) that none
           * of their handlers runs (in a prefetch buffer, or on their way to it), read just before the
           * cut; or, when not given, read just after it over the whole topic (a cut made anyway).
           */
          const cutLink = (slot: number, longJob: string, read?: ClaimsRead) => {
            const plan = outagePlan.shift();
            if (!plan) return;
            const outage = {
              slot,
              ...plan,
              startM: monotonicUs(),
              endM: undefined as number | undefined,
              longJob,
              read,
              claimedNotRunning: -1,
            };
            outages.push(outage);
            const proxy = proxies[slot];
            if (plan.mode === 'cut') proxy.cut();
            else proxy.blackhole();
            if (read === undefined)
              void readClaims(false)
                .then((after) => (outage.read = after))
                .catch((error: unknown) => workers.problems.push(`reading the claims after a cut failed: ${String(error)}`));
            pendingOutages.push(
              sleep(plan.ms).then(() => {
                // The outage's length is the fault itself, not a timing assumption.
                if (plan.mode === 'cut') proxy.restore();
                else if (plan.mode === 'blackhole-reset') {
                  proxy.resetAll();
                  proxy.heal();
                } else proxy.heal();
                outage.endM = monotonicUs();
              }),
            );
          };
          workers.onStart = (start, worker) => {
            const short = (workOf.get(start.job) ?? 0) < 100;
            const previous = lastStart.get(worker.pid);
            lastStart.set(worker.pid, { m: start.m, short });
            if (worker.slot > 1 || short || !start.job.startsWith(`r${round}a`) || openOutageOn(worker.slot)) return;
            // A long job started right after short ones: the claim that brought it may have prefetched
            // others. The link is cut only once claims are seen waiting in a buffer, while that job runs.
            const end = lastEnd.get(worker.pid);
            const afterShort = (end?.short && start.m - end.m < 200_000) || (previous?.short && start.m - previous.m < 200_000);
            if (!afterShort || checkingBuffers) return;
            checkingBuffers = true;
            readClaims()
              .then((read) => {
                // Start lines still on their way count as not started here: the figure is settled exactly after the phase.
                const stillRunning = !workers.ends.has(`${start.job}@${start.token}`);
                if (notStarted(workers, read) > 0 && stillRunning && !openOutageOn(worker.slot)) cutLink(worker.slot, start.job, read);
              })
              .catch((error: unknown) => workers.problems.push(`reading the buffered claims failed: ${String(error)}`))
              .finally(() => (checkingBuffers = false));
          };
          const phaseAOptions = {
            groups: 30,
            maxSize: 5,
            spreadMs: 300,
            longShare: 0.35,
            longMs: [300, 1_000] as [number, number],
            oneAttemptShare: 0.35,
            failOnceShare: 0.1,
          };
          const phaseA = planGroups(random, between, { prefix: `r${round}a`, ...phaseAOptions });
          await schedule(phaseA);
          let plannedA = phaseA.length;
          const startsA = () => workers.starts.filter((s) => s.job.startsWith(`r${round}a`)).length;
          // Every job started once, or both outages began. A phase that ended with no cut where claims
          // waited in a buffer gets another batch (drawn apart, so the seed's plan stays the same).
          for (let extra = 1; ; extra++) {
            await waitFor(() => outagePlan.length === 0 || startsA() >= plannedA, 60_000, 'phase A to start its jobs');
            if (outagePlan.length === 0 || extra > EXTRA_OUTAGE_BATCHES) break;
            const draws = seededDraws(SEED * 100 + round * 10 + extra);
            const batch = planGroups(draws.random, draws.between, { prefix: `r${round}a+${extra}`, ...phaseAOptions });
            await schedule(batch);
            plannedA += batch.length;
          }
          await waitFor(() => !checkingBuffers, 10_000, 'the last read of the buffered claims');
          if (outagePlan.length > 0) {
            // No long job came right after a short one on slots 0-1: cut a busy one anyway (counted apart).
            const busy = [0, 1].map((slot) => workers.inSlot(slot)).find((w) => workers.busy(w));
            cutLink(busy?.slot ?? 0, 'none');
          }
          workers.onStart = undefined;
          await Promise.all(pendingOutages);
          await settle('A', LONG_VISIBILITY + 40_000);
          // Every start line of the phase is in: a delivery without one by the read's answer had not started.
          for (const outage of outages.slice(-2)) outage.claimedNotRunning = outage.read ? notStarted(workers, outage.read) : -1;
          log(
            `round ${round}: A done, outages ` +
              JSON.stringify(
                outages.slice(-2).map(({ slot, mode, ms, longJob, claimedNotRunning }) => ({ slot, mode, ms, longJob, claimedNotRunning })),
              ),
          );

          // --- B: slot 2 SIGSTOPped past its visibility timeout, twice, mid-job.
          const phaseB = planGroups(random, between, {
            prefix: `r${round}b`,
            groups: 6,
            minSize: 6,
            maxSize: 10,
            spreadMs: 1_500,
            longShare: 1,
            longMs: [150, 500],
          });
          const freezes = [between(2_600, 3_600), between(2_600, 3_600)];
          await schedule(phaseB);
          for (const ms of freezes) {
            const target = workers.inSlot(2);
            await waitFor(() => workers.busy(target), 30_000, 'slot 2 to run a handler');
            await workers.freeze(target, ms);
            // Let it run on again before the next stop: it starts a handler or the phase drains.
            const starts = workers.starts.length;
            await waitFor(() => workers.starts.length > starts || workers.running === 0, 30_000, 'the consumers to go on');
          }
          await settle('B', 60_000);
          log(`round ${round}: B done, SIGSTOP ${freezes.join(' ms, ')} ms`);

          // --- C: pause() while short jobs stream through prefetch buffers.
          const phaseC = planGroups(random, between, {
            prefix: `r${round}c`,
            groups: 60,
            maxSize: 4,
            spreadMs: 0,
          });
          const pauseAfter = between(3, 8);
          const holdMs = between(800, 1_500);
          await schedule(phaseC);
          await waitFor(
            () => workers.starts.filter((s) => s.job.startsWith(`r${round}c`)).length >= pauseAfter,
            30_000,
            'phase C to start jobs',
          );
          expect(await queue.pause(TOPIC)).toBe(true);
          const resolvedM = monotonicUs();
          const resolvedWallMs = Date.now();
          const atPause = await queue.stats(TOPIC);
          const dueAtPause = atPause.due + atPause.grouped;
          await waitFor(() => workers.running === 0, 30_000, 'the running handlers to finish while paused');
          await sleep(holdMs); // how long the topic stays paused: the fault's length
          const resumeSentM = monotonicUs();
          const resumeSentWallMs = Date.now();
          pauses.push({ resolvedM, resolvedWallMs, resumeSentM, resumeSentWallMs });
          await queue.resume(TOPIC);
          await settle('C', 30_000);
          log(
            `round ${round}: C done, paused after ${pauseAfter} starts for ${holdMs} ms, ${dueAtPause} due or ` +
              `waiting for their group at the pause`,
          );

          // --- D: a burst on the burst topic, completed jobs sampled.
          const burst = between(3_000, 5_000);
          const burstIds = Array.from({ length: burst }, (_, i) => ({ id: `r${round}d.${i}`, delay: 0, payload: {} }));
          for (let i = 0; i < burstIds.length; i += 1_000) await queue.scheduleMany(BURST, burstIds.slice(i, i + 1_000));
          const burstDone = await holdsWithin(
            async () => {
              const stats = await queue.stats(BURST);
              keptSamples.push({ completed: stats.completed ?? 0, atM: monotonicUs() });
              return stats.due + stats.active + stats.scheduled === 0 && burstIds.every((j) => workers.burstRuns.has(j.id));
            },
            60_000,
            { every: 50 },
          );
          const notRun = burstIds.filter((j) => !workers.burstRuns.has(j.id)).map((j) => j.id);
          if (!burstDone)
            burstLost.push(
              `burst-job-lost: round ${round}: ${notRun.length} of ${burst} burst jobs never ran within 60 s (or ` +
                `the topic not quiet): ${notRun.slice(0, 10).join(' ')}`,
            );
          log(`round ${round}: D done, ${burst} jobs, completed right after: ${keptSamples.at(-1)!.completed}`);
        }

        const mainCompleted = (await queue.stats(TOPIC)).completed ?? 0;
        const deadReasons = new Map((await queue.deadLetters(TOPIC, { limit: 1_000 })).map((j) => [j.id, j.lastError]));
        await workers.stop();

        const { violations, figures } = checkGroupHistory({
          scheduled,
          deliveries: workers.deliveries(),
          dead: new Set(deadReasons.keys()),
          groupConcurrency: 1,
          emptyRestarts: [],
          consumerFaults: workers.frozen,
          deadReasons,
          pauses,
          deadSeenM,
        });
        // kept-over-count: each instance trims to its own count, so never more than the largest.
        const burstBound = Math.max(...config.map((c) => c.burstKeep));
        const mainBound = Math.max(0, ...config.map((c) => c.keepCompleted ?? 0));
        const over = keptSamples.filter((s) => s.completed > burstBound);
        const keptViolations = [
          ...(over.length > 0
            ? [
                `kept-over-count: stats('${BURST}').completed reached ${Math.max(...over.map((s) => s.completed))} ` +
                  `(${over.length} of ${keptSamples.length} samples over), bound ${burstBound} (the largest keepCompleted.count); ` +
                  `right after the last burst: ${keptSamples.at(-1)!.completed}`,
              ]
            : []),
          ...(mainCompleted > mainBound
            ? [`kept-over-count: stats('${TOPIC}').completed is ${mainCompleted} at the end, bound ${mainBound}`]
            : []),
          ...burstLost,
        ];
        const outageFigures = {
          outages: outages.length,
          triggeredByALongJob: outages.filter((o) => o.longJob !== 'none').length,
          withClaimedJobsWaiting: outages.filter((o) => o.claimedNotRunning > 0).length,
          modes: outages.map((o) => o.mode),
        };
        log(
          'figures ' +
            JSON.stringify({
              ...figures,
              ...outageFigures,
              freezes: workers.frozen.length,
              keptMax: Math.max(...keptSamples.map((s) => s.completed)),
              burstBound,
              mainCompleted,
              mainBound,
            }),
        );
        const byRule: Record<string, number> = {};
        for (const rule of [...violations.map((v) => v.rule), ...keptViolations.map((v) => v.slice(0, v.indexOf(':')))])
          byRule[rule] = (byRule[rule] ?? 0) + 1;
        log(`violations by rule ${JSON.stringify(byRule)}`);
        if (violations.length > 0 || keptViolations.length > 0 || workers.problems.length > 0) {
          throw new Error(
            `consumer-faults checker, seed ${SEED} (replay: ` +
              `CONSUMER_FAULTS_SEED=${SEED}): ${violations.length + keptViolations.length} ` +
              `violation(s), ${workers.problems.length} worker problem(s)\n` +
              [
                ...violations
                  .slice(0, 20)
                  .map((v) => `${v.rule}: ${v.message}\n  ${v.deliveries.map((d) => JSON.stringify(d)).join('\n  ')}`),
                ...keptViolations,
                ...workers.problems.slice(0, 5),
              ].join('\n'),
          );
        }
        // Not vacuous: the outages, stops and pauses happened where they matter.
        expect(outages.length).toBe(2 * ROUNDS);
        expect(outages.filter((o) => o.claimedNotRunning > 0).length).toBeGreaterThanOrEqual(1); // jobs claimed, not started, at a cut
        expect(workers.frozen.length).toBe(2 * ROUNDS);
        expect(figures.redeliveries).toBeGreaterThanOrEqual(1); // the stopped consumer's jobs went elsewhere
        expect(figures.abortsRead).toBeGreaterThanOrEqual(1); // a resumed handler read its abort
        expect(keptSamples.length).toBeGreaterThan(ROUNDS);
      },
      120_000 + ROUNDS * 120_000,
    );
  },
);

function matches(stats: object, expected: Record<string, number>): boolean {
  return Object.entries(expected).every(([key, value]) => (stats as Record<string, unknown>)[key] === value);
}

/**
 * `groups` groups of minSize..maxSize jobs, due within `spreadMs` of now + 300 ms, in due order
 * within each group (ids in that order, `seq` numbering it), the groups interleaved. A job is long
 * (`longMs`) with probability `longShare`, else short (0-5 ms); `oneAttemptShare` of them get
 * `maxAttempts: 1`, `failOnceShare` of the others fail their first attempt. A share left out is 0.
 */
function planGroups(
  random: () => number,
  between: (min: number, max: number) => number,
  o: {
    prefix: string;
    groups: number;
    minSize?: number;
    maxSize: number;
    spreadMs: number;
    longShare?: number;
    longMs?: [number, number];
    oneAttemptShare?: number;
    failOnceShare?: number;
  },
): Planned[] {
  const base = Date.now() + 300;
  const perGroup: Planned[][] = [];
  for (let g = 0; g < o.groups; g++) {
    const group = `${o.prefix}:${g}`;
    const size = between(o.minSize ?? 1, o.maxSize);
    let at = base;
    const jobs: Planned[] = [];
    for (let seq = 0; seq < size; seq++) {
      at = Math.max(at, base + between(0, o.spreadMs));
      const workMs = random() < (o.longShare ?? 0) ? between(...o.longMs!) : between(0, 5);
      const oneAttempt = random() < (o.oneAttemptShare ?? 0);
      const failOnce = !oneAttempt && random() < (o.failOnceShare ?? 0);
      const id = `${group}.${seq}`;
      jobs.push({
        entry: {
          id,
          group,
          at,
          payload: { workMs, ...(failOnce ? { fail: 'once' as const } : {}) },
          ...(oneAttempt ? { maxAttempts: 1 } : {}),
        },
        record: { job: id, group, seq, failsAlways: false },
      });
    }
    perGroup.push(jobs);
  }
  // Interleave the groups, each group's jobs in order (equal due times keep their schedule order).
  const out: Planned[] = [];
  while (perGroup.some((jobs) => jobs.length > 0)) {
    const open = perGroup.filter((jobs) => jobs.length > 0);
    out.push(open[Math.floor(random() * open.length)].shift()!);
  }
  return out;
}
