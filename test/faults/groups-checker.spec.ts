import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DelayQueueService } from '../../lib/index.js';
import type { ScheduledJob } from '../../lib/delay-queue/interfaces/schedule-options.interface.js';
import { checkGroupHistory, type ScheduledGroupJob } from '../../tools/soak/groups/group-checker.js';
import { planGroupJobs, toScheduledJobs, type PlannedJob } from '../../tools/soak/groups/group-plan.js';
import type { WorkerJobPayload } from '../../tools/soak/groups/worker.js';
import { monotonicUs } from '../../tools/soak/scheduled-work/constants.js';
import { seededDraws } from '../../tools/soak/soak-constants.js';
import { uniquePrefix } from '../support/test-app.js';
import { holdsWithin, sleep, waitFor } from '../support/timing.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';
import { deadJobs, handledJobs, useProxiedWorkerFleet } from './support/proxied-worker-fleet.js';

/**
 * The randomized run of job groups (the rules: tools/soak/groups/group-checker.ts). Three consumer
 * processes, each through its own fault proxy, on a private redis-server with its append-only file
 * fsynced on every write (`appendfsync always`: a write Redis answered is on disk, so a SIGKILLed
 * Redis loses nothing either). 30 groups of random sizes are scheduled in three waves (random due
 * times, equal ones too, jobs that fail once, jobs that always fail with `maxAttempts` 2) while
 * consumers are SIGKILLed (preferably mid-job) and respawned, Redis is restarted with SIGTERM and
 * with SIGKILL, and script replies are lost. Once every job was handled or dead, a fourth wave runs
 * into a Redis restarted EMPTY: its jobs are lost (the documented limit), what ran of them is still
 * judged. A job's attempt spent by a claim that never reached a handler is excused only by a
 * SIGKILL (`attempt-without-run`): a Redis restart is an outage shorter than the visibility timeout,
 * after which jobs a consumer had claimed but not started go back with their attempt undone.
 * GROUPS_CHECKER_SEED=<n> replays a seed (the same plan and faults; the interleaving still
 * varies with timing).
 */
const SEED = Number(process.env.GROUPS_CHECKER_SEED ?? 20_261_127);
const TOPIC = 'groups';
const VISIBILITY = 3_000;
const QUIET = { scheduled: 0, due: 0, active: 0, grouped: 0, busyGroups: 0 };

type Fault = 'kill' | 'redis-sigterm' | 'redis-sigkill' | 'lost-reply';

describe('job groups under faults (randomized, checked)', () => {
  const server = useLocalRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
  const fleets = useProxiedWorkerFleet();

  it(
    'runs the jobs of a group one at a time (or groupConcurrency at a time), in due order, and loses ' +
      'none, with consumers SIGKILLed, Redis restarted and replies lost',
    async () => {
      const { random, between } = seededDraws(SEED);
      const groupConcurrency = random() < 0.7 ? 1 : 2;
      const keyPrefix = uniquePrefix('gc');
      const log = (line: string) => process.stdout.write(`[groups-checker seed ${SEED}] ${line}\n`);
      log(`groupConcurrency ${groupConcurrency} (replay: GROUPS_CHECKER_SEED=${SEED})`);

      const waves = planGroupJobs(random, { groups: 30, maxSize: 10, waves: 3, spreadMs: 2_500, prefix: 'order:' });
      const [finalWave] = planGroupJobs(random, { groups: 8, maxSize: 5, waves: 1, spreadMs: 1_000, prefix: 'late:' });
      const env = () => ({
        TOPIC,
        CONCURRENCY: '4',
        VISIBILITY: String(VISIBILITY),
        GROUP_CONCURRENCY: String(groupConcurrency),
      });
      const { workers, proxies, queue } = await fleets.start({ redis: server.url, keyPrefix, env, producer: { connectTimeout: 0 } });

      const scheduled: ScheduledGroupJob[] = [];
      const lastAt = new Map<string, number>();
      const scheduleWave = async (jobs: readonly PlannedJob[]) => {
        const scheduledM = monotonicUs();
        const entries = toScheduledJobs(jobs, Date.now() + 200, lastAt);
        for (const job of jobs)
          scheduled.push({ job: job.id, group: job.group, seq: job.seq, scheduledM, failsAlways: job.fail === 'always' });
        await scheduleSurely(queue, entries);
      };

      const counts: Record<Fault, number> = { kill: 0, 'redis-sigterm': 0, 'redis-sigkill': 0, 'lost-reply': 0 };
      const inject = async (fault: Fault) => {
        if (fault === 'kill') {
          // Mid-job when one is busy within a moment, so that the kill cuts a delivery.
          const busy = await waitFor(() => workers.live.find((w) => workers.busy(w)), 3_000, 'a busy consumer').catch(() => undefined);
          const victim = busy ?? workers.live[Math.floor(random() * workers.live.length)];
          if (!victim) return;
          workers.kill(victim);
        } else if (fault === 'lost-reply') {
          // Counted when it hits (the consumers may be idle now): armed until the jobs settled.
          const proxy = proxies[Math.floor(random() * proxies.length)];
          void proxy.loseReply((args) => ['evalsha', 'eval'].includes(args[0]?.toLowerCase()), between(1, 4)).then(() => counts[fault]++);
          return;
        } else {
          await server.restart({ signal: fault === 'redis-sigterm' ? 'SIGTERM' : 'SIGKILL', downtimeMs: between(200, 800) });
        }
        counts[fault]++;
      };

      // The faulty phase: waves 2 and 3 are scheduled between faults, in a seeded order.
      const faults = shuffle(random, [
        'kill',
        'kill',
        'kill',
        'kill',
        'redis-sigterm',
        'redis-sigkill',
        'lost-reply',
        'lost-reply',
      ] as Fault[]);
      await scheduleWave(waves[0]);
      for (const [i, fault] of faults.entries()) {
        await sleep(between(300, 900)); // pacing between faults, not a timing assumption
        if (i === 2) await scheduleWave(waves[1]);
        if (i === 5) await scheduleWave(waves[2]);
        await inject(fault);
      }
      log(`faults ${JSON.stringify(counts)}; waiting for every job to be handled or dead`);

      let dead = new Set<string>();
      const settled = async () => {
        dead = await deadJobs(queue, TOPIC);
        const handled = handledJobs(workers);
        return (
          scheduled.every((s) => handled.has(s.job) || dead.has(s.job)) && matches(await queue.stats(TOPIC), QUIET) && workers.running === 0
        );
      };
      if (!(await holdsWithin(settled, 60_000, { every: 100, retryErrors: true }))) {
        const handled = handledJobs(workers);
        const left = scheduled.filter((s) => !handled.has(s.job) && !dead.has(s.job)).map((s) => s.job);
        throw new Error(
          `groups checker, seed ${SEED}: job-lost: not handled nor dead 60 s after the faults (or the topic ` +
            `not quiet): ${left.join(' ')}\n${JSON.stringify(await queue.stats(TOPIC))}`,
        );
      }

      for (const proxy of proxies) proxy.disarmLostReplies();
      log(`faults ${JSON.stringify(counts)}`);

      // Redis restarted empty while the last wave runs: its jobs are lost, what ran is still judged.
      await scheduleWave(finalWave);
      const startsBefore = workers.starts.length;
      await waitFor(() => workers.starts.length >= startsBefore + 3, 20_000, 'the last wave to start');
      const emptyStartM = monotonicUs();
      server.process.once('exit', () => {
        rmSync(join(server.dir, 'appendonlydir'), { recursive: true, force: true });
        rmSync(join(server.dir, 'dump.rdb'), { force: true });
      });
      await server.restart({ signal: 'SIGKILL', downtimeMs: between(200, 600) });
      const emptyRestart = { startM: emptyStartM, endM: monotonicUs() };
      await waitFor(
        async () => matches(await queue.stats(TOPIC), QUIET) && workers.running === 0,
        30_000,
        'the topic to be quiet after the empty restart',
        {
          every: 100,
          retryErrors: true,
        },
      );
      await workers.stop();

      // A SIGKILL can take claimed jobs with it (their attempt spent without a start): the only excuse for one.
      const consumerFaults = [...workers.killedAt.values()].map((m) => ({ startM: m, endM: m }));
      const { violations, figures } = checkGroupHistory({
        scheduled,
        deliveries: workers.deliveries(),
        dead,
        groupConcurrency,
        emptyRestarts: [emptyRestart],
        consumerFaults,
      });
      log(`figures ${JSON.stringify(figures)}`);
      if (violations.length > 0 || workers.problems.length > 0) {
        throw new Error(
          `groups checker, seed ${SEED} (replay: GROUPS_CHECKER_SEED=${SEED}), groupConcurrency ${groupConcurrency}: ` +
            `${violations.length} violation(s), ${workers.problems.length} worker problem(s)\n` +
            [
              ...violations
                .slice(0, 20)
                .map((v) => `${v.rule}: ${v.message}\n  ${v.deliveries.map((d) => JSON.stringify(d)).join('\n  ')}`),
              ...workers.problems.slice(0, 5),
            ].join('\n'),
        );
      }
      // Not vacuous: every fault happened, deliveries were cut and redelivered, jobs went dead, the empty restart lost some.
      expect(counts.kill).toBeGreaterThanOrEqual(3);
      expect([counts['redis-sigterm'], counts['redis-sigkill']]).toEqual([1, 1]);
      expect(counts['lost-reply']).toBeGreaterThanOrEqual(1);
      expect(figures.cutByKill).toBeGreaterThanOrEqual(1);
      expect(figures.redeliveries).toBeGreaterThanOrEqual(1);
      expect(figures.dead).toBeGreaterThanOrEqual(1);
      expect(figures.handled + figures.dead + figures.lostToDataLoss).toBe(figures.jobs);
      expect(figures.lostToDataLoss).toBeGreaterThanOrEqual(1);
    },
    180_000,
  );
});

function matches(stats: object, expected: Record<string, number>): boolean {
  return Object.entries(expected).every(([key, value]) => (stats as Record<string, unknown>)[key] === value);
}

function shuffle<T>(random: () => number, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

/** `scheduleMany`, retried while Redis restarts (same ids: a retry never stores a job twice nor moves it). */
async function scheduleSurely(queue: DelayQueueService, jobs: Array<ScheduledJob<WorkerJobPayload>>): Promise<void> {
  for (;;) {
    try {
      await queue.scheduleMany(TOPIC, jobs);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== 'REDIS_CONNECTION') throw error;
      await sleep(100);
    }
  }
}
