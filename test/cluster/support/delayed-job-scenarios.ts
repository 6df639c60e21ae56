import { jest } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis } from 'ioredis';
import {
  DelayQueueService,
  JobCancelledError,
  JobRateLimitedError,
  OnDelayed,
  RedisLockEvents,
  UnrecoverableJobError,
  RedisLockModule,
  type JobContext,
  type RedisLockModuleOptions,
} from '../../../lib/index.js';
import { RedisKeySpace, type TopicKeys } from '../../../lib/core/keys/redis-key-space.js';
import { TopicShards } from '../../../lib/delay-queue/jobs/topic-shards.js';
import { claimByHand } from '../../delay-queue/support/claim-by-hand.js';
import { sleep, waitFor, within } from '../../support/timing.js';
import { muteNestLogger } from '../../support/mute-nest-logger.js';
import { topicStats } from '../../support/topic-stats.js';

/** Where the scenarios run: a connection option and a raw client to look at keys. */
export interface ScenarioTarget {
  redis(): RedisLockModuleOptions['redis'];
  raw(): Redis | Cluster;
}

const TOPIC = 'orders.expire';
const HANDLED_TOPIC = 'orders.decorated';

const decoratedRuns: Array<{ payload: unknown; prefix: string }> = [];

@Injectable()
class DecoratedHandlers {
  @OnDelayed(HANDLED_TOPIC, { concurrency: 2 })
  handle(payload: unknown, job: JobContext): void {
    decoratedRuns.push({ payload, prefix: job.topic });
  }
}

/**
 * The delayed-job feature set, run against one target with `shards` shards for the topics under
 * test (1 = the plain layout). Used by the cluster specs and by the single-Redis sharding spec.
 */
export function describeDelayedJobScenarios(label: string, target: ScenarioTarget, shards: number): void {
  describe(label, () => {
    let keyPrefix: string;
    let apps: TestingModule[] = [];
    let queue: DelayQueueService;
    let shardMap: TopicShards;

    const topics = {
      [TOPIC]: { shards },
      [HANDLED_TOPIC]: { shards },
      fair: { shards },
      crash: { shards },
      dead: { shards },
      cancel: { shards },
      grouped: { shards },
      wipe: { shards },
      limited: { shards },
      waited: { shards },
    };
    const newApp = async (extra: Partial<RedisLockModuleOptions> = {}, providers: unknown[] = []) => {
      const app = await Test.createTestingModule({
        imports: [
          RedisLockModule.forRoot({
            redis: target.redis(),
            keyPrefix,
            delayQueue: { backoff: { delay: 50, factor: 1, jitter: 0 }, topics, ...extra.delayQueue },
          }),
        ],
        providers: providers as never[],
      }).compile();
      await app.init();
      apps.push(app);
      return app;
    };
    const shardKeys = (topic: string): TopicKeys[] => shardMap.all(topic);
    /**
     * Subscribers of a cancel channel: NUMSUB on a single Redis; on a cluster, SHARDNUMSUB (sharded
     * pub/sub) plus NUMSUB (classic pub/sub, which a driver without sharded subscribers uses) on every master.
     */
    const cancelListeners = async (channel: string): Promise<number> => {
      const raw = target.raw();
      if (!(raw instanceof Cluster)) return Number(((await raw.pubsub('NUMSUB', channel)) as [string, number])[1]);
      const counts = await Promise.all(
        raw
          .nodes('master')
          .flatMap((node) => ['SHARDNUMSUB', 'NUMSUB'].map((kind) => node.call('PUBSUB', kind, channel) as Promise<[string, number]>)),
      );
      return counts.reduce((sum, [, n]) => sum + Number(n), 0);
    };

    beforeAll(async () => {
      muteNestLogger('error', 'warn');
      keyPrefix = `dqc-${Math.random().toString(16).slice(2, 10)}`;
      shardMap = new TopicShards(
        new RedisKeySpace(keyPrefix),
        new Map(
          shards > 1
            ? [TOPIC, 'fair', 'crash', 'dead', 'cancel', 'grouped', 'limited', 'waited', 'wipe'].map((topic) => [topic, shards] as const)
            : [],
        ),
      );
      queue = (await newApp()).get(DelayQueueService);
    });
    afterAll(async () => {
      await Promise.all(apps.map((app) => app.close()));
      apps = [];
      jest.restoreAllMocks();
    });

    it('schedules, finds, reschedules and cancels jobs by id', async () => {
      const ids = await queue.scheduleMany(
        TOPIC,
        Array.from({ length: 30 }, (_, i) => ({ payload: { n: i }, id: `o-${i}`, delay: 60_000 })),
      );
      const single = await queue.schedule(TOPIC, { n: 'single' }, { delay: 60_000 });
      for (const id of [...ids, single]) expect((await queue.get(TOPIC, id))?.state).toBe('scheduled');
      expect((await queue.get<{ n: number }>(TOPIC, 'o-7'))?.payload).toEqual({ n: 7 });
      // De-duplication finds the existing job in its shard.
      expect(await queue.schedule(TOPIC, { n: 'again' }, { id: 'o-7' })).toBe('o-7');
      expect((await queue.get<{ n: number }>(TOPIC, 'o-7'))?.payload).toEqual({ n: 7 });

      const at = Date.now() + 120_000;
      expect(await queue.reschedule(TOPIC, 'o-3', { at })).toBe(true);
      expect(Math.abs((await queue.get(TOPIC, 'o-3'))!.scheduledAt!.getTime() - at)).toBeLessThan(5);
      expect(await queue.cancel(TOPIC, 'o-4')).toBe(true);
      expect(await queue.cancel(TOPIC, 'o-4')).toBe(false);
      expect(await queue.get(TOPIC, 'o-4')).toBeNull();
      expect(await queue.stats(TOPIC)).toEqual(topicStats({ scheduled: 30 }));

      // Every shard got some of the 31 jobs, and each shard's keys share one slot.
      const perShard = await Promise.all(shardKeys(TOPIC).map((k) => target.raw().zcard(k.due)));
      expect(perShard.reduce((a, b) => a + b, 0)).toBe(30);
      expect(perShard.every((n) => n > 0)).toBe(true);
      for (const k of shardKeys(TOPIC)) {
        expect(new Set([k.due, k.jobs, k.active, k.dead, k.marker].map((key) => calculateSlot(key))).size).toBe(1);
      }
      for (const id of [...ids, single]) await queue.cancel(TOPIC, id);
    });

    it(
      "runs the jobs of each group one at a time and in order, with the group keys in its shard's slot; " + 'pause and a rate limit hold',
      async () => {
        const starts: Array<{ group: string; seq: number; claimedAt: number }> = [];
        const running = new Map<string, number>();
        let overlaps = 0;
        const consumer = queue.consume<{ group: string; seq: number }>(
          'grouped',
          async ({ group, seq }, job) => {
            running.set(group, (running.get(group) ?? 0) + 1);
            if (running.get(group)! > 1) overlaps++;
            starts.push({ group, seq, claimedAt: job.claimedAt.getTime() });
            await sleep(1);
            running.set(group, running.get(group)! - 1);
          },
          { concurrency: 6, rateLimit: { max: 60, duration: 200 } },
        );
        try {
          expect(await queue.pause('grouped')).toBe(true);
          const groups = Array.from({ length: 6 }, (_, g) => `g${g}`);
          await queue.scheduleMany(
            'grouped',
            groups.flatMap((group) => Array.from({ length: 6 }, (_, seq) => ({ payload: { group, seq }, group }))),
          );
          expect(await queue.stats('grouped')).toMatchObject({ paused: true, grouped: 36, due: 0 });
          expect(await queue.resume('grouped')).toBe(true);
          await waitFor(() => starts.length === 36, 15_000, 'all 36 jobs of the six groups');
          expect(overlaps).toBe(0);
          for (const group of groups) expect(starts.filter((s) => s.group === group).map((s) => s.seq)).toEqual([0, 1, 2, 3, 4, 5]);
          const claims = starts.map((s) => s.claimedAt).sort((a, b) => a - b);
          for (let i = 60; i < claims.length; i++) expect(claims[i] - claims[i - 60]).toBeGreaterThanOrEqual(200);
          for (const k of shardKeys('grouped')) {
            const slot = calculateSlot(k.jobs);
            for (const key of [
              k.groupsReady,
              k.groupsOut,
              k.groupLimit,
              k.paused,
              k.rateLog,
              `${k.jobs.slice(0, -':jobs'.length)}:group:g0`,
            ])
              expect(calculateSlot(key)).toBe(slot);
          }
          await waitFor(async () => (await queue.stats('grouped')).active === 0, 5_000, 'the last acknowledgement');
          expect(await queue.stats('grouped')).toMatchObject({ grouped: 0, busyGroups: 0, paused: false });
        } finally {
          await consumer.close();
        }
      },
    );

    it('lists a state page by page across every shard, in order, and updates a waiting job found on any shard', async () => {
      const ids = Array.from({ length: 40 }, (_, i) => `l-${i}`);
      await queue.scheduleMany(
        TOPIC,
        ids.map((id, i) => ({ payload: { i }, id, delay: 3_600_000 + (i % 9) })),
      );
      const listed: string[] = [];
      const times: number[] = [];
      let cursor: string | undefined;
      do {
        const page = await queue.list(TOPIC, { state: 'scheduled', limit: 6, cursor });
        listed.push(...page.jobs.map((job) => job.id));
        times.push(...page.jobs.map((job) => job.scheduledAt!.getTime()));
        cursor = page.cursor;
      } while (cursor);
      expect([...listed].sort()).toEqual([...ids].sort());
      expect(times).toEqual([...times].sort((x, y) => x - y));
      expect(await queue.updatePayload(TOPIC, 'l-13', { i: 'new' })).toBe(true);
      expect((await queue.get(TOPIC, 'l-13'))?.payload).toEqual({ i: 'new' });
      for (const id of ids) await queue.cancel(TOPIC, id);
      expect(await queue.list(TOPIC, { state: 'scheduled' })).toEqual({ jobs: [] });
    });

    it('drains, cleans and obliterates a topic on every shard', async () => {
      await queue.scheduleMany(
        'wipe',
        Array.from({ length: 30 }, (_, i) => ({
          payload: i,
          id: `w-${i}`,
          delay: 3_600_000,
          ...(i % 3 === 0 ? { group: `g${i % 4}` } : {}),
        })),
      );
      expect(await queue.drain('wipe')).toBe(30);
      expect(await queue.stats('wipe')).toEqual(topicStats());
      const consumer = queue.consume('wipe', () => Promise.reject(new Error('dies')), { maxAttempts: 1 });
      try {
        await queue.scheduleMany(
          'wipe',
          Array.from({ length: 12 }, (_, i) => ({ payload: i, id: `d-${i}` })),
        );
        await waitFor(async () => (await queue.stats('wipe')).dead === 12, 15_000, 'the dead letters');
      } finally {
        await consumer.close();
      }
      expect(await queue.clean('wipe', { state: 'dead', limit: 5 })).toBe(5);
      expect((await queue.stats('wipe')).dead).toBe(7);
      await queue.repeat('wipe', { every: 3_600_000 }, { id: 'hourly' });
      expect(await queue.obliterate('wipe')).toMatchObject({ schedules: 1, jobs: 8 });
      const raw = target.raw();
      const left =
        raw instanceof Cluster
          ? (await Promise.all(raw.nodes('master').map((node) => node.keys(`${keyPrefix}:dq:{wipe*`)))).flat()
          : await raw.keys(`${keyPrefix}:dq:{wipe*`);
      expect(left.filter((key) => !key.endsWith(':repeat-removed'))).toEqual([]);
    });

    it('runs every due job exactly once, draining every shard', async () => {
      const seen = new Map<number, number>();
      const consumer = queue.consume<number>(TOPIC, (n) => void seen.set(n, (seen.get(n) ?? 0) + 1), { concurrency: 4 });
      try {
        await queue.scheduleMany(
          TOPIC,
          Array.from({ length: 90 }, (_, i) => ({ payload: i, delay: (i % 10) * 20 })),
        );
        await waitFor(() => seen.size === 90, 15_000, 'all 90 jobs to run');
        await sleep(100);
        expect([...seen.values()].every((count) => count === 1)).toBe(true);
        expect(await queue.stats(TOPIC)).toEqual(topicStats());
      } finally {
        await consumer.close();
      }
    });

    it('retries failures with backoff, buries them as dead letters, and requeues them with retryDead', async () => {
      const attempts: Array<{ id: string; attempt: number }> = [];
      let fail = true;
      const consumer = queue.consume<number>(
        'dead',
        (_n, job) => {
          attempts.push({ id: job.id, attempt: job.attempt });
          if (fail) throw new Error(`boom ${job.id}`);
        },
        { concurrency: 3, maxAttempts: 2 },
      );
      try {
        const ids = await queue.scheduleMany(
          'dead',
          Array.from({ length: 9 }, (_, i) => ({ payload: i, id: `d-${i}` })),
        );
        await waitFor(async () => (await queue.stats('dead')).dead === 9, 15_000, 'nine dead letters');
        expect(attempts.filter((a) => a.attempt === 2)).toHaveLength(9);
        const dead = await queue.deadLetters('dead', { limit: 100 });
        expect(dead.map((j) => j.id).sort()).toEqual([...ids].sort());
        for (let i = 1; i < dead.length; i++) expect(dead[i - 1].diedAt!.getTime()).toBeGreaterThanOrEqual(dead[i].diedAt!.getTime());
        expect(dead[0].lastError).toMatch(/boom/);
        expect(await queue.deadLetters('dead', { limit: 4 })).toHaveLength(4);

        fail = false;
        expect(await queue.retryDead('dead', 'd-0')).toBe(1);
        await waitFor(() => attempts.some((a) => a.id === 'd-0' && a.attempt === 1 && !fail), 10_000, 'd-0 to run again');
        expect(await queue.retryDead('dead')).toBe(8);
        await waitFor(
          async () => {
            const s = await queue.stats('dead');
            return s.dead === 0 && s.due === 0 && s.scheduled === 0 && s.active === 0;
          },
          15_000,
          'the requeued jobs to succeed',
        );
      } finally {
        await consumer.close();
      }
    });

    it('blocks every shard of a rate-limited topic until one end, and buries an unrecoverable job at once', async () => {
      const limited: Array<{ id: string; blockedUntilMs: number }> = [];
      const unrecoverable: boolean[] = [];
      const events = apps[0].get(RedisLockEvents);
      const onLimited = (event: { id: string; blockedUntilMs: number }) => void limited.push(event);
      const onDead = (event: { unrecoverable?: boolean }) => void unrecoverable.push(event.unrecoverable === true);
      events.on('job.rate-limited', onLimited);
      events.on('job.dead', onDead);
      const runs: Array<{ id: string; attempt: number; claimedAt: number }> = [];
      const consumer = queue.consume(
        'limited',
        (_payload, job) => {
          runs.push({ id: job.id, attempt: job.attempt, claimedAt: job.claimedAt.getTime() });
          if (job.id === 'r' && runs.length === 1) throw new JobRateLimitedError(800);
          if (job.id === 'u') throw new UnrecoverableJobError('cannot succeed');
        },
        { concurrency: 3, maxAttempts: 3 },
      );
      try {
        await queue.schedule('limited', 0, { id: 'r' });
        await waitFor(() => limited.length === 1, 10_000, 'the rate-limited run');
        const untilMs = limited[0].blockedUntilMs;
        const ends = await Promise.all(shardKeys('limited').map((keys) => target.raw().get(keys.blocked)));
        expect(ends).toEqual(shardKeys('limited').map(() => String(untilMs)));
        await queue.scheduleMany('limited', [
          { payload: 0, id: 'u' },
          ...Array.from({ length: 5 }, (_, i) => ({ payload: i, id: `x-${i}` })),
        ]);
        await waitFor(async () => runs.length === 8 && (await queue.stats('limited')).dead === 1, 15_000, 'every job after the block');
        for (const run of runs.slice(1)) expect(run.claimedAt).toBeGreaterThanOrEqual(untilMs);
        expect(runs.filter((run) => run.id === 'r').map((run) => run.attempt)).toEqual([1, 1]);
        expect(runs.filter((run) => run.id === 'u').map((run) => run.attempt)).toEqual([1]);
        expect(unrecoverable).toEqual([true]);
        expect((await queue.deadLetters('limited')).map((job) => [job.id, job.lastError])).toEqual([
          ['u', 'UnrecoverableJobError: cannot succeed'],
        ]);
      } finally {
        events.off('job.rate-limited', onLimited);
        events.off('job.dead', onDead);
        await consumer.close();
      }
    });

    it('recovers the jobs of a consumer that crashed after claiming them', async () => {
      await queue.scheduleMany(
        'crash',
        Array.from({ length: 6 }, (_, i) => ({ payload: i, id: `c-${i}` })),
      );
      // A consumer that claimed everything and died: the claim script run by hand, never acknowledged.
      let claimed = 0;
      for (const k of shardKeys('crash')) {
        const claim = { maxClaims: 100, visibilityMs: 300, defaultMaxAttempts: 5 };
        const reply = await claimByHand(target.raw(), k, `${k.jobs}:crashed-claim`, claim);
        claimed += reply.claimed.length;
      }
      expect(claimed).toBe(6);
      const runs: Array<{ id: string; attempt: number }> = [];
      const survivor = (await newApp()).get(DelayQueueService);
      const consumer = survivor.consume('crash', (_p, job) => void runs.push({ id: job.id, attempt: job.attempt }), { concurrency: 3 });
      try {
        await waitFor(() => runs.length === 6, 15_000, 'the six claimed jobs to run again');
        expect(runs.every((r) => r.attempt === 2)).toBe(true);
      } finally {
        await consumer.close();
      }
    });

    it('aborts a job running on another instance as soon as it is cancelled (sharded pub/sub on a cluster)', async () => {
      const runner = (await newApp()).get(DelayQueueService);
      let consumer: { close(): Promise<void> } | undefined;
      const started = new Promise<JobContext>((resolve) => {
        // No extension within the test (every 20 s): an abort within seconds came from the cancel notice.
        consumer = runner.consume(
          'cancel',
          async (_p, job) => {
            resolve(job);
            await new Promise((done) => job.signal.addEventListener('abort', done, { once: true }));
          },
          { visibilityTimeout: 60_000 },
        );
      });
      try {
        for (const k of shardKeys('cancel'))
          await waitFor(async () => (await cancelListeners(k.cancelChannel)) === 1, 10_000, `the subscription of ${k.cancelChannel}`);
        const id = await queue.schedule('cancel', 1);
        const job = await started;
        const aborted = new Promise((resolve) => job.signal.addEventListener('abort', () => resolve(job.signal.reason), { once: true }));
        expect(await queue.cancel('cancel', id)).toBe(true);
        expect(await within(aborted, 5_000, 'the abort on the other instance')).toBeInstanceOf(JobCancelledError);
        expect(await queue.get('cancel', id)).toBeNull();
      } finally {
        await consumer?.close();
      }
    });

    it('waitFor answers the outcome of each job from another instance (sharded pub/sub on a cluster)', async () => {
      const runner = (await newApp()).get(DelayQueueService);
      let release!: () => void;
      const go = new Promise<void>((resolve) => (release = resolve));
      const consumer = runner.consume<number>(
        'waited',
        async (n) => {
          await go;
          if (n < 0) throw new Error('negative');
          return n * 2;
        },
        { keepCompleted: { count: 100 }, concurrency: 20 },
      );
      try {
        const ids = await queue.scheduleMany('waited', [
          ...Array.from({ length: 12 }, (_, n) => ({ payload: n })),
          { payload: -1, maxAttempts: 1 },
        ]);
        const outcomes = ids.map((id) => queue.waitFor('waited', id).catch((error: Error) => error.name));
        const waitedIds = async () => (await Promise.all(shardKeys('waited').map((k) => target.raw().hkeys(k.waited)))).flat();
        await waitFor(async () => (await waitedIds()).length === ids.length, 10_000, 'every wait in place');
        for (const k of shardKeys('waited')) expect(calculateSlot(k.outcomeChannel)).toBe(calculateSlot(k.jobs));
        release();
        expect(await within(Promise.all(outcomes), 10_000, 'the outcomes')).toEqual([
          ...Array.from({ length: 12 }, (_, n) => n * 2),
          'JobDeadError',
        ]);
        expect(await waitedIds()).toEqual([]);
        expect(await queue.waitFor('waited', ids[5])).toBe(10);
      } finally {
        await consumer.close();
      }
    });

    it('waitFor answers the outcomes of the jobs its own instance finishes during the shutdown drain', async () => {
      const app = await newApp();
      apps = apps.filter((a) => a !== app);
      const own = app.get(DelayQueueService);
      let release!: () => void;
      const draining = new Promise<void>((resolve) => (release = resolve));
      let started = 0;
      const consumer = own.consume<number>(
        'waited',
        async (n) => {
          started++;
          await draining;
          return n * 3;
        },
        // Every job must hold a handler slot at once, and `concurrency` is split evenly over the shards
        // while the ids land where they hash: 9 slots per shard, so all 9 in one shard still start.
        { keepCompleted: { count: 100 }, concurrency: 9 * shards },
      );
      const ids = await own.scheduleMany(
        'waited',
        Array.from({ length: 9 }, (_, n) => ({ payload: n })),
      );
      const settledEarly: string[] = [];
      const outcomes = ids.map((id) =>
        own.waitFor('waited', id).catch((error: Error) => {
          settledEarly.push(`${id}: ${error.name} ${error.message}`);
          return error.name;
        }),
      );
      const waitedIds = async () => (await Promise.all(shardKeys('waited').map((k) => target.raw().hkeys(k.waited)))).flat();
      let waited = 0;
      await waitFor(
        async () => started === ids.length && (waited = (await waitedIds()).length) === ids.length,
        10_000,
        () => `every wait in place (${started} of ${ids.length} started, ${waited} waited; failed: ${settledEarly.join('; ') || 'none'})`,
      );
      const closing = app.close();
      await waitFor(() => !consumer.running, 10_000, 'the drain to begin');
      release();
      await closing;
      expect(await within(Promise.all(outcomes), 10_000, 'the outcomes')).toEqual(Array.from({ length: 9 }, (_, n) => n * 3));
    });

    it('job logs are written and read across instances and go with their job', async () => {
      const runner = (await newApp()).get(DelayQueueService);
      let release!: () => void;
      const go = new Promise<void>((resolve) => (release = resolve));
      const consumer = runner.consume<number>(
        'logged',
        async (n, job) => {
          job.log(`start ${n}`);
          await go;
          job.log(`end ${n}`);
        },
        { keepCompleted: { count: 100 }, concurrency: 10 },
      );
      try {
        const ids = await queue.scheduleMany(
          'logged',
          Array.from({ length: 6 }, (_, n) => ({ payload: n })),
        );
        const logsOf = () => Promise.all(ids.map((id) => queue.logs('logged', id)));
        await waitFor(async () => (await logsOf()).every((lines) => lines.length === 1), 10_000, 'every first line');
        expect(await logsOf()).toEqual(ids.map((_, n) => [`start ${n}`]));
        for (const k of shardKeys('logged')) expect(calculateSlot(`${k.logsPrefix}x`)).toBe(calculateSlot(k.jobs));
        release();
        await waitFor(
          async () => (await Promise.all(ids.map((id) => queue.get('logged', id)))).every((j) => j?.state === 'completed'),
          10_000,
          'completions',
        );
        expect(await logsOf()).toEqual(ids.map((_, n) => [`start ${n}`, `end ${n}`]));
        expect(await queue.cancel('logged', ids[2])).toBe(true);
        expect(await queue.logs('logged', ids[2])).toEqual([]);
        expect(await queue.logs('logged', ids[3])).toEqual(['start 3', 'end 3']);
      } finally {
        await consumer.close();
      }
    });

    it('runs @OnDelayed handlers found at bootstrap', async () => {
      decoratedRuns.length = 0;
      const app = await newApp({}, [DecoratedHandlers]);
      await app.get(DelayQueueService).scheduleMany(HANDLED_TOPIC, [{ payload: 'a' }, { payload: 'b', delay: 50 }, { payload: 'c' }]);
      await waitFor(() => decoratedRuns.length === 3, 10_000, 'the decorated handler to run three jobs');
      expect(decoratedRuns.map((r) => r.payload).sort()).toEqual(['a', 'b', 'c']);
      expect(decoratedRuns.every((r) => r.prefix === HANDLED_TOPIC)).toBe(true);
    });

    if (shards > 1) {
      it('lets no shard starve: a backlog in one shard does not hold back due jobs of the others', async () => {
        // 150 due jobs whose ids all hash to shard 0.
        const backlog: string[] = [];
        for (let i = 0; backlog.length < 150; i++) if (shardMap.indexOf('fair', `b-${i}`) === 0) backlog.push(`b-${i}`);
        const others: string[] = [];
        for (let i = 0; others.length < shards - 1; i++) {
          const index = shardMap.indexOf('fair', `o-${i}`);
          if (index !== 0 && !others.some((id) => shardMap.indexOf('fair', id) === index)) others.push(`o-${i}`);
        }
        await queue.scheduleMany(
          'fair',
          backlog.map((id) => ({ payload: id, id })),
        );
        const order: string[] = [];
        const consumer = queue.consume<string>(
          'fair',
          async (id) => {
            order.push(id);
            await sleep(5);
          },
          { concurrency: shards },
        );
        try {
          await waitFor(() => order.length >= 5, 10_000, 'the backlog to start');
          await queue.scheduleMany(
            'fair',
            others.map((id) => ({ payload: id, id })),
          );
          await waitFor(() => others.every((id) => order.includes(id)), 10_000, 'the other shards’ jobs to run');
          // They ran long before the backlog of shard 0 was through.
          expect(order.filter((id) => id.startsWith('b-')).length).toBeLessThan(backlog.length);
          await waitFor(() => order.length === backlog.length + others.length, 20_000, 'the backlog to drain');
        } finally {
          await consumer.close();
        }
      });

      it('refuses a topic that names one of the shards directly', async () => {
        await expect(queue.schedule(`${TOPIC}#1`, 1)).rejects.toThrow(/names a shard of the sharded topic/);
      });
    }
  });
}
