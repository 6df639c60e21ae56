import type { DelayQueueService } from '../../lib/index.js';
import { scheduleJobsScript } from '../../lib/delay-queue/scripts/schedule-jobs.lua.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import {
  checkDedupeHistory,
  type DedupeCall,
  type DedupeFigures,
  type DedupeMode,
  type DedupeRun,
} from '../../tools/soak/dedupe/dedupe-checker.js';
import { seededDraws } from '../../tools/soak/soak-constants.js';
import { useClusterQueues } from '../delay-queue/support/cluster-queues.js';
import { useDelayInstances } from '../delay-queue/support/delay-instances.js';
import type { DelayTestApp } from '../delay-queue/support/delay-test-app.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { sleep, waitFor } from '../support/timing.js';

/**
 * The randomized run of throttle and debounce (the rules: tools/soak/dedupe/dedupe-checker.ts). Three
 * instances of one service share a topic; the third reaches Redis through a fault proxy that drops
 * the reply of a schedule script every 1-3 of its calls (ioredis re-sends it). Two of them consume,
 * one a job at a time, one up to 8; a handler works 0-40 ms.
 *
 * Random phase: 8-10 keys, each with a seeded mode and ttl (150-600 ms) and a seeded plan of waves:
 * 1-3 calls sent at once from distinct instances, then a pause. A throttle key calls in 16-28 waves
 * less than ttl/4 apart (calls near every window's end), then once more after ttl + 20 ms at least (a
 * window closed and reopened); its job runs at once or after a seeded `delay` (0 to ttl). A debounce
 * key calls in 2-4 bursts of 2-4 waves, less than ttl/2 apart but one pause in four of 0.8-1.3 ttl
 * (calls that meet the job as it comes due and is claimed), each burst followed by the wait for its
 * jobs to run. Every call (instance, key, sent/answered wall time, the `scheduleWithResult` answer,
 * whether its reply was dropped and when) and every handler run (`JobContext` createdAt, scheduledAt,
 * claimedAt) is recorded, and the whole history judged once every job ran and the topic is empty.
 *
 * Then four cases made to happen (each waits for its event; a case whose outcome the machine's load
 * spoiled is tried again with a longer ttl):
 * - throttle: a call after the key's job ran and was acknowledged answers `existing`;
 * - throttle: a creating call's reply is dropped and the link held cut until the key EXPIRED, then the
 *   call is re-sent: it answers `created` from its first run and makes no second job;
 * - debounce: a call's reply is dropped and, while its link is cut, another instance's call replaces
 *   its job; the re-sent call must not put its payload back: the job runs once with the later payload;
 * - debounce: a call while the key's job is due but unclaimed (the topic paused): it must replace it,
 *   judged by debounce-not-replaced (resumed once the Redis clock is past the call's bound).
 *
 * DEDUPE_SEED=<n> replays a seed (the same keys, plans and fault draws; the interleaving still varies
 * with timing).
 *
 * The second test runs the random phase (no proxy) on a local Redis Cluster, the topic split in 3
 * shards: three instances on the Cluster, the same rules. DEDUPE_CLUSTER_SEED=<n> replays it.
 */
const SEED = Number(process.env.DEDUPE_SEED ?? 20_261_129);
const CLUSTER_SEED = Number(process.env.DEDUPE_CLUSTER_SEED ?? 20_261_130);
/** Shards of the topic in the Cluster run: a job with a dedupe key goes to that key's shard. */
const CLUSTER_SHARDS = 3;
const TOPIC = 'deduped';
/** Node and Redis read one host clock: ms truncation and Redis's command-time snapshot (see the checker). */
const TOLERANCE_MS = 5;
/** How many schedule replies the proxy drops in the random phase, at most. */
const LOST_REPLIES = 12;

interface Payload {
  readonly key: string;
  readonly call: string;
  /** How long the handler works, 0-40 ms: later calls meet running jobs, and jobs wait in a buffer. */
  readonly workMs: number;
}

/** One wave: the instances that call at once, then the pause before the next wave. */
interface Wave {
  readonly instances: readonly number[];
  readonly pauseMs: number;
}

interface KeyPlan {
  readonly key: string;
  readonly mode: DedupeMode;
  readonly ttl: number;
  /** Throttle: the created job's `delay` (0: it runs at once, so most `existing` answers come after its run). */
  readonly delay?: number;
  /** Throttle: one list of waves; debounce: one per burst. */
  readonly bursts: ReadonlyArray<readonly Wave[]>;
}

describe('throttle and debounce across instances (randomized, checked)', () => {
  const instances = useDelayInstances('dedupe-checker');
  let proxy: FaultProxy | undefined;
  let proxied: DelayTestApp | undefined;
  // Also when the run fails half-way: the proxied instance is closed before its proxy stops.
  afterAll(async () => {
    await proxied?.close();
    await proxy?.stop();
  });

  it(
    'keeps one job per key per ttl (throttle) and one run ttl after the last call with its payload (debounce), ' +
      'with instances racing and replies lost',
    async () => {
      const { random, between } = seededDraws(SEED);
      const log = (line: string) => process.stdout.write(`[dedupe-checker seed ${SEED}] ${line}\n`);
      const plans = planKeys(random, between);
      log(`keys ${plans.map((p) => `${p.key} ${p.mode} ttl ${p.ttl}`).join(', ')} (replay: DEDUPE_SEED=${SEED})`);

      const keyPrefix = uniquePrefix('ddc');
      const link = await FaultProxy.start({ port: Number(new URL(testRedisUrl()).port) });
      proxy = link;
      const direct = await instances.start(2, { keyPrefix });
      const [third] = await instances.start(1, { keyPrefix, redis: link.url });
      proxied = third;
      const apps: DelayTestApp[] = [...direct, third];

      const recorder = recordHistory(
        apps.map((a) => a.queue),
        direct.map((a) => a.queue),
      );
      const { dropped, call, waitForRuns } = recorder;

      /**
       * Drops the reply of the nth schedule script of the proxied instance whose call `which` accepts,
       * and records when; resolves to the call, or undefined when the dropped reply was an error (a
       * NOSCRIPT: the script did not run). A call dropped again keeps its first drop: it had run by then.
       */
      const dropReply = async (which: (name: string) => boolean, nth = 1): Promise<string | undefined> => {
        const { args, reply } = await link.loseReplyDetailed(
          FaultProxy.script(scheduleJobsScript, (a) => which(callOf(a) ?? '')),
          nth,
        );
        const name = callOf(args);
        if (!name || reply.startsWith('-')) return undefined;
        if (!dropped.has(name)) dropped.set(name, Date.now());
        return name;
      };

      // Random phase: the proxy drops a schedule reply every 1-3 of the third instance's calls.
      const dropDraws = Array.from({ length: LOST_REPLIES }, () => between(1, 3));
      const dropNext = (i: number): void => {
        if (i < dropDraws.length) void dropReply(() => true, dropDraws[i]).then(() => dropNext(i + 1));
      };
      dropNext(0);
      await recorder.drive(plans);
      link.disarmLostReplies();
      const randomDrops = dropped.size;

      // Made to happen 1: an `existing` answer after the key's job ran and was acknowledged.
      let existingAfterRun = false;
      for (let attempt = 0; !existingAfterRun && attempt < 5; attempt++) {
        const plan = { key: `after-run-${attempt}`, mode: 'throttle' as const, ttl: 1_000 * 2 ** attempt };
        const first = await call(0, plan);
        const id = first.result?.id;
        if (id === undefined) continue; // a failed call: the checker reports it
        await waitForRuns([first], 'the run of the first call');
        await waitFor(async () => (await apps[1].queue.get(TOPIC, id)) === null, 10_000, 'its acknowledgement');
        existingAfterRun = (await call(1, plan)).result?.status === 'existing';
      }

      // Made to happen 2: a creating throttle call re-sent after its key expired.
      const expiring = { key: 'resent-after-expiry', mode: 'throttle' as const, ttl: 150 };
      const expiringName = recorder.nextCall();
      const expiringDrop = dropReply((name) => name === expiringName);
      const expiringCall = call(2, expiring);
      const expiringDropped = await expiringDrop.then((name) => {
        link.cut(); // before ioredis can reconnect: the re-send waits for the key to expire
        return name !== undefined;
      });
      const keyName = `${keyPrefix}:dq:{${TOPIC}}:dedupe:${expiring.key}`;
      await waitFor(async () => (await instances.redis().exists(keyName)) === 0, 10_000, 'the throttle key to expire');
      link.restore();
      const resent = await expiringCall;

      // Made to happen 3: a debounce call re-sent after another instance's call replaced its job.
      let overtaken = false;
      for (let attempt = 0; !overtaken && attempt < 5; attempt++) {
        const plan = { key: `overtaken-${attempt}`, mode: 'debounce' as const, ttl: 600 * 2 ** attempt };
        const name = recorder.nextCall();
        const drop = dropReply((called) => called === name);
        const first = call(2, plan);
        let firstRan = false;
        const later = drop.then((droppedName) => {
          link.cut(); // before ioredis can reconnect: the re-send waits for the later call's answer
          firstRan = droppedName !== undefined;
          return call(0, plan);
        });
        const overtaking = await later;
        link.restore();
        const resentFirst = await first;
        overtaken =
          firstRan &&
          resentFirst.result?.status === 'created' &&
          overtaking.result?.status === 'replaced' &&
          overtaking.result.id === resentFirst.result.id;
        await waitForRuns([resentFirst, overtaking], `the run of ${plan.key}`);
      }

      // Made to happen 4: a debounce call while the key's job is due but unclaimed (the topic paused):
      // it must replace that job (debounce-not-replaced judges it; the job is claimed only after resume).
      const unclaimed = { key: 'due-unclaimed', mode: 'debounce' as const, ttl: 150 };
      await apps[0].queue.pause(TOPIC);
      const waiting = await call(0, unclaimed);
      const waitingId = waiting.result?.id;
      if (waitingId !== undefined) {
        await waitFor(async () => (await apps[0].queue.get(TOPIC, waitingId))?.state === 'due', 10_000, 'the debounced job to come due');
      }
      const onDue = await call(1, unclaimed);
      // Resumed once the Redis clock is past the call's bound: a claim then is certainly after the call.
      const redisMs = async () => {
        const [seconds, micros] = await instances.redis().time();
        return Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
      };
      await waitFor(async () => (await redisMs()) > onDue.answeredMs + TOLERANCE_MS, 10_000, 'the Redis clock to pass the call');
      await apps[0].queue.resume(TOPIC);
      await waitForRuns([waiting, onDue], `the run of ${unclaimed.key}`);

      const figures = await recorder.settleAndJudge(apps[0].queue, `seed ${SEED} (replay: DEDUPE_SEED=${SEED})`);
      log(`figures ${JSON.stringify(figures)}, replies dropped in the random phase ${randomDrops}`);
      // Not vacuous (each made to happen above, or by the plan): both modes, calls of one key racing
      // from distinct instances, throttle windows that closed and reopened, an `existing` answer
      // after the job ran, a creating call re-sent after its key expired that made no second job, a
      // debounce call re-sent after a later call replaced its job.
      expect(figures.keys.throttle).toBeGreaterThanOrEqual(2);
      expect(figures.keys.debounce).toBeGreaterThanOrEqual(2);
      expect(figures.racingCalls).toBeGreaterThanOrEqual(2);
      expect(figures.windows).toBeGreaterThan(figures.keys.throttle);
      expect(existingAfterRun).toBe(true);
      expect(figures.existingAfterRun).toBeGreaterThanOrEqual(1);
      expect(expiringDropped).toBe(true);
      expect(resent.result?.status).toBe('created');
      expect(overtaken).toBe(true);
      expect(figures.mostCallsOnOneJob).toBeGreaterThanOrEqual(2);
      expect(waitingId).toBeDefined(); // and the call made while it was due was judged
      expect(figures.lostReplies.created).toBeGreaterThanOrEqual(2);
    },
    120_000,
  );
});

describe('throttle and debounce on a Redis Cluster, sharded topic (randomized, checked)', () => {
  const cluster = useClusterQueues('ddc');

  it('keeps the same rules when every call of a key reaches its key’s shard', async () => {
    const { random, between } = seededDraws(CLUSTER_SEED);
    const log = (line: string) => process.stdout.write(`[dedupe-checker cluster seed ${CLUSTER_SEED}] ${line}\n`);
    const plans = planKeys(random, between);
    log(
      `${CLUSTER_SHARDS} shards, keys ${plans.map((p) => `${p.key} ${p.mode} ttl ${p.ttl}`).join(', ')} ` +
        `(replay: DEDUPE_CLUSTER_SEED=${CLUSTER_SEED})`,
    );
    const queues = await cluster.start(3, { [TOPIC]: CLUSTER_SHARDS });
    const recorder = recordHistory(queues, queues.slice(0, 2));
    await recorder.drive(plans);
    const figures = await recorder.settleAndJudge(queues[0], `cluster seed ${CLUSTER_SEED} (replay: DEDUPE_CLUSTER_SEED=${CLUSTER_SEED})`);
    log(`figures ${JSON.stringify(figures)}`);
    // Not vacuous (by the plan): both modes, racing calls, throttle windows that closed and reopened.
    expect(figures.keys.throttle).toBeGreaterThanOrEqual(2);
    expect(figures.keys.debounce).toBeGreaterThanOrEqual(2);
    expect(figures.racingCalls).toBeGreaterThanOrEqual(2);
    expect(figures.windows).toBeGreaterThan(figures.keys.throttle);
  }, 120_000);
});
/** What `recordHistory` gives a run: the history so far, the calls, and the judge. */
interface HistoryRecorder {
  readonly calls: DedupeCall[];
  /** Calls whose reply the proxy dropped, with when the drop was seen (their script had run by then). */
  readonly dropped: Map<string, number>;
  /** The name (and payload marker) the next call gets. */
  nextCall(): string;
  /** One `scheduleWithResult` from instance `instance` (index in `queues`), recorded. */
  call(instance: number, plan: Pick<KeyPlan, 'key' | 'mode' | 'ttl' | 'delay'>): Promise<DedupeCall>;
  /** Waits for the job of every call in `made` to have run. */
  waitForRuns(made: readonly DedupeCall[], what: string): Promise<unknown>;
  /** Runs every key's plan at once; a debounce burst ends with the wait for its jobs to run. */
  drive(plans: readonly KeyPlan[]): Promise<void>;
  /**
   * Waits for every job to run and the topic to be empty (a second job made by a re-sent call would
   * be left to run), closes the consumers, and judges the history: throws naming every violation
   * by rule (`what`: the seed and how to replay it), else returns the figures.
   */
  settleAndJudge(queue: DelayQueueService, what: string): Promise<DedupeFigures>;
}

/**
 * Records the calls made through `queues` and the runs of the consumers started on `consuming`: the
 * first takes one job at a time (the others it claims wait in its buffer), the others up to 8.
 */
function recordHistory(queues: readonly DelayQueueService[], consuming: readonly DelayQueueService[]): HistoryRecorder {
  const calls: DedupeCall[] = [];
  const runs: DedupeRun[] = [];
  const dropped = new Map<string, number>();
  const consumers = consuming.map((queue, slot) =>
    queue.consume<Payload>(
      TOPIC,
      async (payload, job) => {
        const claimedAtMs = job.claimedAt.getTime();
        await sleep(payload.workMs);
        runs.push({
          job: job.id,
          key: payload.key,
          payload: payload.call,
          attempt: job.attempt,
          createdAtMs: job.createdAt.getTime(),
          scheduledAtMs: job.scheduledAt.getTime(),
          claimedAtMs,
          endedMs: Date.now(),
        });
      },
      { concurrency: slot === 0 ? 1 : 8 },
    ),
  );
  let named = 0;
  const call: HistoryRecorder['call'] = async (instance, plan) => {
    const name = `c${named++}`;
    const sentMs = Date.now();
    const outcome = await queues[instance]
      .scheduleWithResult<Payload>(
        TOPIC,
        { key: plan.key, call: name, workMs: (named * 7_919) % 41 },
        { delay: plan.delay, dedupe: { key: plan.key, ttl: plan.ttl, mode: plan.mode } },
      )
      .then(
        (result) => ({ result: { id: result.id, status: result.status } }),
        (error: unknown) => ({ error: String(error) }),
      );
    const { key, mode, ttl } = plan;
    const recorded: DedupeCall = { call: name, instance, key, mode, ttl, sentMs, answeredMs: Date.now(), ...outcome };
    calls.push(recorded);
    return recorded;
  };
  const ranJobs = () => new Set(runs.map((r) => r.job));
  const waitForRuns: HistoryRecorder['waitForRuns'] = (made, what) =>
    waitFor(() => made.every((c) => !c.result || ranJobs().has(c.result.id)), 20_000, what);
  return {
    calls,
    dropped,
    nextCall: () => `c${named}`,
    call,
    waitForRuns,
    async drive(plans) {
      await Promise.all(
        plans.map(async (plan) => {
          for (const burst of plan.bursts) {
            const made: DedupeCall[] = [];
            for (const wave of burst) {
              made.push(...(await Promise.all(wave.instances.map((i) => call(i, plan)))));
              await sleep(wave.pauseMs); // the plan's pacing, not a timing assumption
            }
            if (plan.mode === 'debounce') await waitForRuns(made, `the runs of a burst of ${plan.key}`);
          }
        }),
      );
    },
    async settleAndJudge(queue, what) {
      await waitForRuns(calls, 'every job to run');
      await waitFor(
        async () => {
          const stats = await queue.stats(TOPIC);
          return stats.scheduled + stats.due + stats.active === 0;
        },
        20_000,
        'the topic to be empty',
      );
      await Promise.all(consumers.map((consumer) => consumer.close()));
      const history = calls.map((c) => (dropped.has(c.call) ? { ...c, lostReply: true, ranByMs: dropped.get(c.call) } : c));
      const { violations, figures } = checkDedupeHistory({ calls: history, runs, toleranceMs: TOLERANCE_MS });
      if (violations.length > 0) {
        const byRule = new Map<string, number>();
        for (const v of violations) byRule.set(v.rule, (byRule.get(v.rule) ?? 0) + 1);
        throw new Error(
          `dedupe checker, ${what}: ${violations.length} violation(s) ${JSON.stringify(Object.fromEntries(byRule))}\n` +
            violations
              .slice(0, 20)
              .map((v) => [
                `${v.rule}: ${v.message}`,
                ...v.calls.map((c) => `call ${JSON.stringify(c)}`),
                ...v.runs.map((r) => `run ${JSON.stringify(r)}`),
              ])
              .map((lines) => lines.join('\n  '))
              .join('\n'),
        );
      }
      return figures;
    },
  };
}

/** The call marker a schedule script's arguments carry (in the job's payload), if any. */
function callOf(args: readonly string[]): string | undefined {
  for (const arg of args) {
    const found = /"call":"(c\d+)"/.exec(arg);
    if (found) return found[1];
  }
  return undefined;
}

/**
 * The keys and their plans: the first two throttle, the next two debounce, the rest drawn. Every
 * key's first wave has 2-3 calls from distinct instances (racing); a throttle key ends with a pause
 * past its ttl and one more call, so at least one window closed before a call that had to reopen it.
 */
function planKeys(random: () => number, between: (min: number, max: number) => number): KeyPlan[] {
  const count = between(8, 10);
  return Array.from({ length: count }, (_, k) => {
    const mode: DedupeMode = k < 2 ? 'throttle' : k < 4 ? 'debounce' : random() < 0.5 ? 'throttle' : 'debounce';
    const ttl = between(150, 600);
    const wave = (first: boolean, pauseMs: number): Wave => {
      const size = first ? between(2, 3) : between(1, 3);
      const all = [0, 1, 2];
      for (let i = all.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [all[i], all[j]] = [all[j], all[i]];
      }
      return { instances: all.slice(0, size), pauseMs };
    };
    if (mode === 'throttle') {
      const delay = random() < 0.5 ? 0 : between(0, ttl);
      const waves = Array.from({ length: between(16, 28) }, (_, i) => wave(i === 0, between(0, Math.round(ttl / 4))));
      waves.push(wave(false, ttl + 20), { instances: [between(0, 2)], pauseMs: 0 });
      return { key: `t${k}`, mode, ttl, delay, bursts: [waves] };
    }
    // One pause in four around the ttl: calls that meet the job as it comes due and is claimed.
    const pause = () => (random() < 0.25 ? between(Math.round(ttl * 0.8), Math.round(ttl * 1.3)) : between(0, Math.round(ttl / 2)));
    const bursts = Array.from({ length: between(2, 4) }, (_, b) =>
      Array.from({ length: between(2, 4) }, (_, i) => wave(b === 0 && i === 0, pause())),
    );
    return { key: `d${k}`, mode, ttl, bursts };
  });
}
