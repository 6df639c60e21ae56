import type { DelayQueueService } from '../../lib/index.js';
import { claimDueJobsScript } from '../../lib/delay-queue/scripts/claim-due-jobs.lua.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { checkRateLimit, checkRateLimitPerInstance, type RateLimitConfig } from '../../tools/soak/groups/rate-limit-checker.js';
import { monotonicUs } from '../../tools/soak/scheduled-work/constants.js';
import { seededDraws } from '../../tools/soak/soak-constants.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { holdsWithin, sleep, waitFor } from '../support/timing.js';
import { deadJobs, handledJobs, useProxiedWorkerFleet, type ProxiedWorkerFleet } from './support/proxied-worker-fleet.js';

/**
 * The randomized run of the rate limit across instances (the rules: tools/soak/groups/rate-limit-checker.ts):
 * three consumer processes with the same random `rateLimit: { max, duration }`, jobs scheduled in
 * random bursts (due at once or within 300 ms, equal due times too), one consumer SIGKILLed while a
 * handler runs and respawned (its jobs come back after the visibility timeout: new claims, counted).
 * Every delivery's `JobContext.claimedAt` (Redis clock) is recorded; no window of `duration` ms may
 * hold more than `max` of them, every job is handled, none failed. RATE_CHECKER_SEED=<n> replays a
 * seed (the same limit, bursts and kill point; the interleaving still varies with timing).
 *
 * Replies of claims are also dropped (each consumer reaches Redis through a fault proxy; the claim is
 * re-sent and answers again, with the first run's claim time): RATE_CHECKER_LOST_REPLIES=0 turns that off.
 *
 * The second run has the three instances CONFIGURED DIFFERENTLY (docs/delayed-jobs.md: each applies
 * its own `rateLimit` against the same log of claims): a long window (max 2-4 per 1-2 s), a short one
 * (max 1-2 per 20-60 ms) and a middle one (max 2-5 per 150-500 ms), each with its own random
 * `concurrency` (1-4), the same bursts and lost claim replies, no kill. Each claim is judged against
 * its own instance's limit, counting the claims of every instance before it (`rate-own-limit-exceeded`
 * in tools/soak/groups/rate-limit-checker.ts). RATE_CHECKER_MIXED_SEED=<n> replays a seed;
 * RATE_CHECKER_MIXED_JOBS=<n> schedules n jobs instead of 60-90 (the soak: a longer run).
 */
const SEED = Number(process.env.RATE_CHECKER_SEED ?? 20_261_128);
const MIXED_SEED = Number(process.env.RATE_CHECKER_MIXED_SEED ?? 20_261_202);
const MIXED_JOBS = process.env.RATE_CHECKER_MIXED_JOBS === undefined ? undefined : Number(process.env.RATE_CHECKER_MIXED_JOBS);
const LOSE_CLAIM_REPLIES = process.env.RATE_CHECKER_LOST_REPLIES !== '0';
const TOPIC = 'rated';

describe('rate limit across instances (randomized, checked)', () => {
  const fleets = useProxiedWorkerFleet();

  /** Three consumer processes of TOPIC on the run's Redis, each through a fault proxy of its own, and a producer app. */
  function startFleet(keyPrefix: string, env: (slot: number) => Record<string, string>): Promise<ProxiedWorkerFleet> {
    return fleets.start({ redis: testRedisUrl(), keyPrefix, env: (slot) => ({ TOPIC, ...env(slot) }) });
  }

  /**
   * Unless RATE_CHECKER_LOST_REPLIES=0, drops the reply of a claim every 1-3 claims on each proxy (the
   * claim is re-sent), 30 in all; returns how many were dropped so far.
   */
  function loseClaimReplies(proxies: readonly FaultProxy[], between: (min: number, max: number) => number): () => number {
    let lostReplies = 0;
    const lose = (proxy: FaultProxy): void =>
      void proxy.loseReply(FaultProxy.script(claimDueJobsScript), between(1, 3)).then(() => {
        if (++lostReplies < 30) lose(proxy);
      });
    if (LOSE_CLAIM_REPLIES) proxies.forEach(lose);
    return () => lostReplies;
  }

  /**
   * Schedules `total` jobs in random bursts (due at once or within 300 ms, equal due times too) with
   * random pauses between them; `afterBurst` runs after each burst. Returns each job's schedule time.
   */
  async function scheduleInBursts(
    queue: DelayQueueService,
    total: number,
    idPrefix: string,
    random: () => number,
    afterBurst: (scheduled: Map<string, number>) => Promise<void> = async () => undefined,
  ): Promise<Map<string, number>> {
    const between = (min: number, max: number) => Math.round(min + random() * (max - min));
    const scheduled = new Map<string, number>();
    for (let burst = 0; scheduled.size < total; burst++) {
      const size = Math.min(total - scheduled.size, between(1, Math.max(2, Math.floor(total / 3))));
      const delays = [0, between(0, 300), between(0, 300)];
      const jobs = Array.from({ length: size }, (_, i) => ({
        id: `${idPrefix}${burst}.${i}`,
        delay: delays[Math.floor(random() * delays.length)],
        payload: { workMs: between(20, 250) },
      }));
      const scheduledM = monotonicUs();
      await queue.scheduleMany(TOPIC, jobs);
      for (const job of jobs) scheduled.set(job.id, scheduledM);
      await afterBurst(scheduled);
      await sleep(between(0, 1_500)); // pacing between bursts, not a timing assumption
    }
    return scheduled;
  }

  /**
   * Waits up to `timeoutMs` for every scheduled job to be handled and the topic to be empty, then
   * stops dropping replies, reads the dead letters and stops the workers.
   */
  async function settle({ workers, queue, proxies }: ProxiedWorkerFleet, scheduled: Map<string, number>, timeoutMs: number) {
    const handled = () => handledJobs(workers);
    const quiet = async () => {
      const stats = await queue.stats(TOPIC);
      return (
        [...scheduled.keys()].every((id) => handled().has(id)) && stats.due + stats.active + stats.scheduled === 0 && workers.running === 0
      );
    };
    const settled = await holdsWithin(quiet, timeoutMs, { every: 100 });
    for (const proxy of proxies) proxy.disarmLostReplies();
    const dead = await deadJobs(queue, TOPIC);
    await workers.stop();
    return { settled, handled: handled(), dead };
  }

  it('never lets more than max claims into a window of duration ms across 3 instances, and fails no job over the limit', async () => {
    const { random, between } = seededDraws(SEED);
    const max = between(2, 5);
    const duration = between(200, 500);
    // About 6 s of work at the limit.
    const total = Math.round((max * 6_000) / duration);
    const keyPrefix = uniquePrefix('rl');
    const log = (line: string) => process.stdout.write(`[rate-limit-checker seed ${SEED}] ${line}\n`);
    log(`rateLimit { max: ${max}, duration: ${duration} }, ${total} jobs (replay: RATE_CHECKER_SEED=${SEED})`);

    const fleet = await startFleet(keyPrefix, () => ({
      CONCURRENCY: '4',
      VISIBILITY: '4000', // a consumer stalled by a loaded machine keeps its jobs: only the kill costs an attempt
      RATE_MAX: String(max),
      RATE_DURATION: String(duration),
    }));
    const { workers, queue } = fleet;
    const lostReplies = loseClaimReplies(fleet.proxies, between);

    const killAfter = between(Math.floor(total / 4), Math.floor(total / 2));
    let killed = false;
    const scheduled = await scheduleInBursts(queue, total, 'b', random, async ({ size }) => {
      if (killed || size < killAfter) return;
      // Mid-job, so that the kill cuts a delivery and its job is claimed again.
      const victim = await waitFor(() => workers.live.find((w) => workers.busy(w)), 10_000, 'a consumer running a handler');
      workers.kill(victim);
      killed = true;
    });
    const { settled, handled, dead } = await settle(fleet, scheduled, 60_000);

    const starts = workers.starts.map((s) => ({ job: s.job, attempt: s.attempt, claimedAtMs: s.claimedAt, pid: s.pid, startM: s.m }));
    const killsM = [...workers.killedAt.values()];
    const { violations, figures } = checkRateLimit({ max, duration, claims: starts, scheduled, handled, dead, killsM });
    log(`figures ${JSON.stringify(figures)}, claim replies lost ${lostReplies()}${settled ? '' : ' (not every job handled within 60 s)'}`);
    if (violations.length > 0 || workers.problems.length > 0) {
      throw new Error(
        `rate-limit checker, seed ${SEED} (replay: RATE_CHECKER_SEED=${SEED}), rateLimit { max: ${max}, duration: ${duration} }: ` +
          `${violations.length} violation(s), ${workers.problems.length} worker problem(s)\n` +
          [
            ...violations.slice(0, 20).map((v) => `${v.rule}: ${v.message}\n  ${v.claims.map((c) => JSON.stringify(c)).join('\n  ')}`),
            ...workers.problems.slice(0, 5),
          ].join('\n'),
      );
    }
    // Not vacuous: the limit was reached (it held jobs back), several instances claimed, a kill cut a delivery.
    expect(settled).toBe(true);
    expect(figures.fullestWindow).toBe(max);
    expect(figures.processes).toBeGreaterThanOrEqual(2);
    expect(workers.killedAt.size).toBe(1);
    expect(workers.deliveries().filter((d) => d.killedM !== undefined).length).toBeGreaterThanOrEqual(1);
  }, 120_000);

  it(
    'instances configured differently: each claim keeps its own instance’s limit against the claims ' +
      'of all instances, and no job over it fails',
    async () => {
      const { random, between } = seededDraws(MIXED_SEED);
      const limits: RateLimitConfig[] = [
        { max: between(2, 4), duration: between(1_000, 2_000) },
        { max: between(1, 2), duration: between(20, 60) },
        { max: between(2, 5), duration: between(150, 500) },
      ];
      const concurrency = limits.map(() => between(1, 4));
      const drawn = between(60, 90);
      const total = MIXED_JOBS ?? drawn;
      const keyPrefix = uniquePrefix('rlm');
      const log = (line: string) => process.stdout.write(`[rate-limit-checker mixed seed ${MIXED_SEED}] ${line}\n`);
      log(
        `rateLimit per instance ${JSON.stringify(limits)}, concurrency ${concurrency.join('/')}, ${total} ` +
          `jobs (replay: RATE_CHECKER_MIXED_SEED=${MIXED_SEED})`,
      );

      const fleet = await startFleet(keyPrefix, (slot) => ({
        CONCURRENCY: String(concurrency[slot]),
        VISIBILITY: '4000',
        RATE_MAX: String(limits[slot].max),
        RATE_DURATION: String(limits[slot].duration),
      }));
      const { workers, queue } = fleet;
      const lostReplies = loseClaimReplies(fleet.proxies, between);

      const scheduled = await scheduleInBursts(queue, total, 'm', random);
      const { settled, handled, dead } = await settle(fleet, scheduled, 60_000 + total * 100);

      const claims = workers.starts.map((s) => ({
        job: s.job,
        attempt: s.attempt,
        claimedAtMs: s.claimedAt,
        pid: s.pid,
        startM: s.m,
        token: s.token,
      }));
      const { violations, figures } = checkRateLimitPerInstance({
        claims,
        limitOf: (pid) => limits[workers.slotOf(pid)],
        scheduled,
        handled,
        dead,
        killsM: [],
      });
      log(
        `figures ${JSON.stringify(figures)}, claim replies lost ${lostReplies()}${settled ? '' : ' (not every job handled within 60 s)'}`,
      );
      if (violations.length > 0 || workers.problems.length > 0) {
        throw new Error(
          `rate-limit checker (instances configured differently), seed ${MIXED_SEED} (replay: ` +
            `RATE_CHECKER_MIXED_SEED=${MIXED_SEED}), rateLimit per instance ${JSON.stringify(limits)}: ` +
            `${violations.length} violation(s), ${workers.problems.length} worker problem(s)\n` +
            [
              ...violations.slice(0, 10).map(
                (v) =>
                  `${v.rule}: ${v.message}\n  ${v.claims
                    .slice(0, 12)
                    .map((c) => JSON.stringify(c))
                    .join('\n  ')}`,
              ),
              ...workers.problems.slice(0, 5),
            ].join('\n'),
        );
      }
      // Not vacuous: a limit held jobs back, and at least two instances claimed.
      expect(settled).toBe(true);
      expect(figures.limitReachedBy).toBeGreaterThanOrEqual(1);
      expect(figures.processes).toBeGreaterThanOrEqual(2);
    },
    120_000 + (MIXED_JOBS ?? 0) * 500,
  );
});
