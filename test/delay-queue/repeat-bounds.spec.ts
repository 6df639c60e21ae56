import { Injectable } from '@nestjs/common';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Redis } from 'ioredis';
import { inPgTransaction, PostgresJobOutbox } from '../../lib/outbox/postgres/index.js';
import { startOutboxApp, type RecordedRun } from '../outbox/support/outbox-harness.js';
import { runInTransaction, InvalidOptionsError, OnDelayed, type DelayQueueService, type JobContext } from '../../lib/index.js';
import { RepeatScheduler } from '../../lib/delay-queue/repeat/repeat-scheduler.js';
import { parseTickJobId } from '../../lib/delay-queue/jobs/tick-job-id.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { testRedisUrl, uniquePrefix, useRawRedis } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { createDelayApp, useClosedAfterEach, type DelayTestApp } from './support/delay-test-app.js';

/*
 * Bounded repeats: `limit`, `startDate` and `endDate` of repeat(), through the public API against
 * real Redis. Times are read from the Redis server clock (the one ticks follow), never slept on. A
 * schedule is judged finished from what Redis holds: no tick job queued and none running, after
 * every instance's periodic check ran again, so nothing is left that could run.
 */

const TOPIC = 'bounded';

interface Run {
  readonly id: string;
  readonly tick: number;
  readonly attempt: number;
  /** The Redis server's ms when the handler started. */
  readonly startedAt: number;
}

async function serverMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

const onDelayedRuns: string[] = [];

@Injectable()
class Countdown {
  @OnDelayed('bounded.decorated', { repeat: { every: 100, limit: 2 } })
  run(_payload: unknown, job: JobContext): void {
    onDelayedRuns.push(job.id);
  }
}

describe('repeat() with limit, startDate and endDate', () => {
  const redis = useRawRedis();
  const { apps, consumers } = useClosedAfterEach();
  let runs: Run[] = [];
  afterEach(() => {
    runs = [];
  });

  async function app(
    keyPrefix?: string,
    providers: Parameters<typeof createDelayApp>[1] = [],
    url = testRedisUrl(),
  ): Promise<DelayTestApp> {
    const created = await createDelayApp({ keyPrefix, redis: url }, providers);
    apps.push(created);
    return created;
  }

  /** Consumes the topic on `t`, recording each delivery with the server time it started at. */
  function consume(t: DelayTestApp, clock = redis): void {
    consumers.push(
      t.queue.consume(TOPIC, async (_payload: unknown, job: JobContext) => {
        const startedAt = await serverMs(clock);
        const tick = parseTickJobId(job.id)!;
        runs.push({ id: tick.scheduleId, tick: tick.tickMs, attempt: job.attempt, startedAt });
      }),
    );
  }

  const ticksOf = (id: string) =>
    runs
      .filter((run) => run.id === id)
      .map((run) => run.tick)
      .sort((a, b) => a - b);
  const check = (t: DelayTestApp) => t.app.get(RepeatScheduler).checkAll();
  const listed = async (queue: DelayQueueService, id: string) => (await queue.listRepeats(TOPIC)).find((info) => info.id === id);

  /** Waits until schedule `id` is finished with `count` runs, its last run done, and no job of the topic left; the checks run meanwhile. */
  async function finishedWith(id: string, count: number, instances: readonly DelayTestApp[]): Promise<void> {
    await waitFor(
      async () => {
        await Promise.all(instances.map(check));
        const info = await listed(instances[0].queue, id);
        const stats = await instances[0].queue.stats(TOPIC);
        return info?.finished === true && info.runs === count && ticksOf(id).length >= count && stats.scheduled + stats.active === 0;
      },
      20_000,
      `${id} finished after ${count} runs`,
    );
    // Later checks on every instance queue nothing more: with no job left, nothing more can run.
    for (const t of [...instances, ...instances]) await check(t);
    expect(await instances[0].queue.stats(TOPIC)).toMatchObject({ scheduled: 0, due: 0, active: 0, dead: 0 });
  }

  it('runs a schedule with limit N exactly N times, each tick once, with two instances racing on it; then keeps it finished', async () => {
    const keyPrefix = uniquePrefix('dq');
    const [a, b] = [await app(keyPrefix), await app(keyPrefix)];
    const [fromA, fromB] = await Promise.all([a, b].map((t) => t.queue.repeat(TOPIC, { every: 60 }, { id: 'twelve', limit: 12 })));
    expect(fromA).toMatchObject({ runs: 0, limit: 12 });
    expect(fromB.nextRunAt).toEqual(fromA.nextRunAt);
    expect(fromA.finished).toBeUndefined();
    consume(a);
    consume(b);
    await finishedWith('twelve', 12, [a, b]);

    const ticks = ticksOf('twelve');
    expect(ticks).toEqual(Array.from({ length: 12 }, (_, i) => fromA.nextRunAt.getTime() + i * 60));
    expect(runs.every((run) => run.attempt === 1)).toBe(true);
    const info = (await listed(b.queue, 'twelve'))!;
    expect(info).toMatchObject({ runs: 12, limit: 12, finished: true, lastRunAt: new Date(ticks[11]), nextRunAt: new Date(ticks[11]) });
    // Kept until removed, and counted by stats().schedules.
    expect((await a.queue.stats(TOPIC)).schedules).toBe(1);
    expect(await a.queue.removeRepeat(TOPIC, 'twelve')).toBe(true);
    expect((await a.queue.stats(TOPIC)).schedules).toBe(0);
  }, 60_000);

  it('runs nothing before startDate, on the Redis clock; the first tick is the first one from startDate on', async () => {
    const t = await app();
    const startDate = (await serverMs(redis)) + 1_234;
    const info = await t.queue.repeat(TOPIC, { every: 100 }, { id: 'later', startDate, limit: 3 });
    expect(info).toMatchObject({ runs: 0, startDate: new Date(startDate), nextRunAt: new Date(Math.ceil(startDate / 100) * 100) });
    consume(t);
    await finishedWith('later', 3, [t]);
    expect(ticksOf('later')).toEqual([0, 1, 2].map((i) => info.nextRunAt.getTime() + i * 100));
    for (const run of runs) expect(run.startedAt).toBeGreaterThanOrEqual(startDate);
  }, 30_000);

  it('queues no tick after endDate; the schedule then stays finished', async () => {
    const t = await app();
    const endDate = (await serverMs(redis)) + 1_050;
    const info = await t.queue.repeat(TOPIC, { every: 100 }, { id: 'until', endDate: new Date(endDate) });
    expect(info).toMatchObject({ runs: 0, endDate: new Date(endDate) });
    consume(t);
    const last = Math.floor(endDate / 100) * 100;
    const count = (last - info.nextRunAt.getTime()) / 100 + 1;
    await finishedWith('until', count, [t]);
    expect(ticksOf('until')).toEqual(Array.from({ length: count }, (_, i) => info.nextRunAt.getTime() + i * 100));
    expect(Math.max(...ticksOf('until'))).toBeLessThanOrEqual(endDate);
    expect(await listed(t.queue, 'until')).toMatchObject({ runs: count, finished: true });
  }, 30_000);

  it('refuses a new schedule whose endDate leaves no tick after the Redis clock; stores nothing', async () => {
    const t = await app();
    const endDate = (await serverMs(redis)) - 1;
    await expect(t.queue.repeat(TOPIC, { every: 100 }, { id: 'past', endDate })).rejects.toThrow(InvalidOptionsError);
    await expect(t.queue.repeat(TOPIC, { every: 100 }, { id: 'past', endDate })).rejects.toThrow(/repeat\.endDate.*give a later endDate/);
    await expect(t.queue.repeat(TOPIC, { every: 100 }, { id: 'past', startDate: 5_000, endDate: 4_000 })).rejects.toThrow(
      /repeat\.endDate.*not after startDate/,
    );
    expect(await t.queue.listRepeats(TOPIC)).toEqual([]);
    expect(await t.queue.stats(TOPIC)).toMatchObject({ scheduled: 0, schedules: 0 });
  });

  it(
    'keeps the runs count when repeat() changes the bounds: a higher limit runs the difference, a lower ' +
      'one finishes it; a removal starts over',
    async () => {
      const t = await app();
      await t.queue.repeat(TOPIC, { every: 100 }, { id: 'grow', limit: 2 });
      consume(t);
      await finishedWith('grow', 2, [t]);

      const raised = await t.queue.repeat(TOPIC, { every: 100 }, { id: 'grow', limit: 4 });
      expect(raised).toMatchObject({ runs: 2, limit: 4 });
      expect(raised.finished).toBeUndefined();
      await finishedWith('grow', 4, [t]);
      expect(new Set(ticksOf('grow')).size).toBe(4);

      // A limit below the runs so far: finished at once, nothing queued.
      const lowered = await t.queue.repeat(TOPIC, { every: 100 }, { id: 'grow', limit: 1 });
      expect(lowered).toMatchObject({ runs: 4, limit: 1, finished: true });
      expect(await t.queue.stats(TOPIC)).toMatchObject({ scheduled: 0, active: 0 });

      // A waiting tick that repeat() replaces before any delivery is not counted.
      await t.queue.repeat('bounded.far', { every: 60_000 }, { limit: 5 });
      expect(await t.queue.repeat('bounded.far', { every: 30_000 }, { limit: 5 })).toMatchObject({ runs: 0 });

      expect(await t.queue.removeRepeat(TOPIC, 'grow')).toBe(true);
      expect(await t.queue.repeat(TOPIC, { every: 100 }, { id: 'grow', limit: 1 })).toMatchObject({ runs: 0, limit: 1 });
      await finishedWith('grow', 1, [t]);
      expect(new Set(ticksOf('grow')).size).toBe(5);
    },
    60_000,
  );

  it(
    '@OnDelayed({ repeat: { limit } }) stays finished across a restart: the registration at bootstrap ' + 'finds it and queues nothing',
    async () => {
      onDelayedRuns.length = 0;
      const keyPrefix = uniquePrefix('dq');
      const first = await app(keyPrefix, [Countdown]);
      await waitFor(
        async () => {
          const [info] = await first.queue.listRepeats('bounded.decorated');
          const stats = await first.queue.stats('bounded.decorated');
          return onDelayedRuns.length >= 2 && info?.finished === true && stats.scheduled + stats.active === 0;
        },
        20_000,
        'two runs of the decorated schedule',
      );
      await first.close();

      const second = await app(keyPrefix, [Countdown]);
      expect(await second.queue.listRepeats('bounded.decorated')).toMatchObject([{ runs: 2, limit: 2, finished: true }]);
      await check(second);
      expect(await second.queue.stats('bounded.decorated')).toMatchObject({ scheduled: 0, due: 0, active: 0, schedules: 1 });
      expect(new Set(onDelayedRuns).size).toBe(2);
    },
    60_000,
  );

  it('carries the bounds through the transactional outbox: a committed repeat() with a limit runs exactly `limit` times', async () => {
    const db = new PGlite();
    const current = new AsyncLocalStorage<Transaction>();
    const delivered: RecordedRun[] = [];
    const outboxed = await startOutboxApp({
      redis: testRedisUrl(),
      keyPrefix: uniquePrefix('bounds-outbox'),
      outbox: new PostgresJobOutbox({ transaction: inPgTransaction(() => current.getStore()), relay: db, applyMigrationAtStart: true }),
      topics: ['bounded.outbox'],
      runs: delivered,
    });
    try {
      const pending = await runInTransaction(() =>
        db.transaction((tx) =>
          current.run(tx, () => outboxed.queue.repeat('bounded.outbox', { every: 100 }, { limit: 3, endDate: Date.UTC(2099, 0, 1) })),
        ),
      );
      expect(pending).toMatchObject({ pending: true, runs: 0, limit: 3, endDate: new Date(Date.UTC(2099, 0, 1)) });
      await waitFor(
        async () => {
          const [info] = await outboxed.queue.listRepeats('bounded.outbox');
          const stats = await outboxed.queue.stats('bounded.outbox');
          return info?.finished === true && delivered.length >= 3 && stats.scheduled + stats.active === 0;
        },
        20_000,
        'three runs of the outboxed schedule',
      );
      expect(await outboxed.queue.listRepeats('bounded.outbox')).toMatchObject([{ runs: 3, limit: 3, finished: true }]);
      expect(new Set(delivered.map((run) => run.id)).size).toBe(3);
    } finally {
      await outboxed.close();
      await db.close();
    }
  }, 60_000);

  describe('after Redis lost its data (a redis-server of its own, restarted without persistence)', () => {
    let server: LocalRedisServer | undefined;
    let clock: Redis | undefined;

    afterEach(async () => {
      clock?.disconnect();
      clock = undefined;
      await server?.stop();
      server = undefined;
    });

    it(
      'does not restore a schedule with a limit (its runs were lost); restores one bounded by dates only; ' +
        'repeat() starts the limited one over',
      async () => {
        server = await startLocalRedisServer({ args: [] });
        clock = new Redis(server.url, { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
        const t = await app(uniquePrefix('dq'), [], server.url);
        t.app.get(RepeatScheduler).restoreAfterMissingMs = 0;
        const endDate = (await serverMs(clock)) + 3_600_000;
        await t.queue.repeat(TOPIC, { every: 150 }, { id: 'limited', limit: 1_000 });
        await t.queue.repeat(TOPIC, { every: 150 }, { id: 'window', endDate });
        consume(t, clock);
        await waitFor(() => ticksOf('limited').length >= 2 && ticksOf('window').length >= 2, 20_000, 'two ticks of each');
        // No consumer while the count is read after the restore: a claimed tick queues the next one and counts it.
        await consumers.pop()!.close();

        await server.restart({ signal: 'SIGKILL' });
        const lostAt = await waitFor(() => serverMs(clock!).catch(() => false as const), 30_000, 'Redis to answer again');
        // The first check finds both missing; the second restores what may be restored.
        await check(t);
        await check(t);
        const after = await t.queue.listRepeats(TOPIC);
        expect(after.map((info) => info.id)).toEqual(['window']);
        expect(after[0]).toMatchObject({ runs: 0, endDate: new Date(endDate) });
        consume(t, clock);
        await waitFor(() => ticksOf('window').filter((tick) => tick > lostAt).length >= 2, 20_000, 'window ticking again');
        await check(t);
        expect((await t.queue.listRepeats(TOPIC)).map((info) => info.id)).toEqual(['window']);
        expect(ticksOf('limited').filter((tick) => tick > lostAt)).toEqual([]);

        // The application's own repeat() after the loss stores it as new: its count starts over.
        expect(await t.queue.repeat(TOPIC, { every: 150 }, { id: 'limited', limit: 1_000 })).toMatchObject({ runs: 0, limit: 1_000 });
      },
      90_000,
    );
  });
});
