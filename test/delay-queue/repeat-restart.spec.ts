import type { JobContext } from '../../lib/index.js';
import type { RepeatCatchUp } from '../../lib/delay-queue/interfaces/repeat-options.interface.js';
import { RepeatScheduler } from '../../lib/delay-queue/repeat/repeat-scheduler.js';
import { MISSED_TICK_AFTER_MS } from '../../lib/delay-queue/repeat/tick-calendar.js';
import { parseTickJobId } from '../../lib/delay-queue/jobs/tick-job-id.js';
import { uniquePrefix } from '../support/test-app.js';
import { deferred, holdsWithin, waitFor, type Deferred } from '../support/timing.js';
import { createDelayApp } from './support/delay-test-app.js';
import { useOwnRedisPerTest } from './support/own-redis-per-test.js';

/*
 * Repeatable schedules across a restart of Redis itself (its own redis-server per test): with an
 * append-only file (appendfsync always) while ticks are due and one is in flight, and without
 * persistence (the schedule is lost with the data and the instances store it again). Three
 * applications share the schedule, as three instances would. Every delivery is recorded here (not in
 * Redis, which the test restarts) and judged by one checker; ticks are counted, never timed.
 */

const EVERY = 250;
const TOPIC = 'restart.beat';
const INSTANCES = 3;
/** Visibility of a running tick's job: a Redis outage longer than this makes it a redelivery. */
const VISIBILITY_MS = 3_000;

/** One delivery of a tick to a handler. */
interface Delivery {
  readonly tick: number;
  readonly attempt: number;
  readonly instance: number;
}

/** What the checker allows besides "every tick from the first to the last, delivered once". */
interface Allowances {
  /** Ticks that were running when Redis went down: they may be delivered again, as attempt 2, 3… */
  readonly inFlight?: readonly number[];
  /** Ticks the catch-up rule (or the data loss) lets go without a run. */
  readonly mayBeMissing?: (tick: number) => boolean;
}

/**
 * Every breach of "each tick is enqueued once and runs with at-least-once delivery": a tick delivered
 * twice as the same attempt (enqueued or claimed twice), a second delivery of a tick that was not in
 * flight, a tick off the schedule's grid, and a tick missing between the first and the last one run
 * that the allowances do not explain.
 */
function breaches(deliveries: readonly Delivery[], allow: Allowances = {}): string[] {
  const found: string[] = [];
  const byTick = new Map<number, Delivery[]>();
  for (const delivery of deliveries) byTick.set(delivery.tick, [...(byTick.get(delivery.tick) ?? []), delivery]);
  for (const [tick, list] of byTick) {
    if (tick % EVERY !== 0) found.push(`tick ${tick} is not on the schedule's grid`);
    const attempts = list.map((delivery) => delivery.attempt).sort((a, b) => a - b);
    if (new Set(attempts).size !== attempts.length) found.push(`tick ${tick} delivered twice as the same attempt: ${attempts.join(',')}`);
    // A tick claimed just before a crash, whose claim's reply was lost, is first delivered when taken back.
    if (attempts[0] !== 1 && !allow.inFlight?.includes(tick))
      found.push(`tick ${tick} never delivered as attempt 1: ${attempts.join(',')}`);
    if (attempts.length > 1 && !allow.inFlight?.includes(tick))
      found.push(`tick ${tick} redelivered (${attempts.join(',')}) without being in flight`);
  }
  const ticks = [...byTick.keys()].sort((a, b) => a - b);
  for (let tick = ticks[0]; tick <= ticks[ticks.length - 1]; tick += EVERY) {
    if (!byTick.has(tick) && !allow.mayBeMissing?.(tick)) found.push(`tick ${tick} never ran`);
  }
  return found;
}

/** Ticks run (first deliveries), in tick order. */
function ticksRun(deliveries: readonly Delivery[]): number[] {
  return [...new Set(deliveries.map((delivery) => delivery.tick))].sort((a, b) => a - b);
}

describe('repeat() across a restart of Redis', () => {
  let deliveries: Delivery[] = [];
  /** Set to hold the next delivery (any instance) until released: a tick in flight. */
  let holdNext: { gate: Deferred<void>; tick?: number } | undefined;

  beforeEach(() => {
    deliveries = [];
  });
  // Declared before the test's Redis, whose hook closes the consumers: a held handler is released first.
  afterEach(() => {
    holdNext?.gate.resolve();
    holdNext = undefined;
  });
  const own = useOwnRedisPerTest();
  const { apps, consumers } = own;

  function handler(instance: number) {
    return async (_payload: unknown, job: JobContext) => {
      const tick = parseTickJobId(job.id)!.tickMs;
      deliveries.push({ tick, attempt: job.attempt, instance });
      const hold = holdNext;
      if (hold && hold.tick === undefined) {
        hold.tick = tick;
        await hold.gate.promise;
      }
    };
  }

  /** Three applications on the test's own Redis, each upserting the schedule and consuming its topic. */
  async function startInstances(args: string[], catchUp: RepeatCatchUp): Promise<void> {
    const server = await own.start(args);
    const keyPrefix = uniquePrefix('rr');
    for (let i = 0; i < INSTANCES; i++) {
      const app = await createDelayApp({ redis: server.url, keyPrefix, delayQueue: { visibilityTimeout: VISIBILITY_MS } });
      apps.push(app);
      await app.queue.repeat(TOPIC, { every: EVERY }, { catchUp });
      consumers.push(app.queue.consume(TOPIC, handler(i)));
    }
  }

  /**
   * Waits until every tick from `from` to `to` ran, then gives the deliveries of the ticks up to
   * `to`. Later ticks are left out: one claimed into a consumer's prefetch buffer when the test
   * closes the consumers goes back to the queue without running.
   */
  async function settled(from: number, to: number, what: string): Promise<Delivery[]> {
    const missing = () => {
      const run = new Set(deliveries.map((delivery) => delivery.tick));
      const absent: number[] = [];
      for (let tick = from; tick <= to; tick += EVERY) if (!run.has(tick)) absent.push(tick);
      return absent;
    };
    await waitFor(() => missing().length === 0, 60_000, what).catch((error: unknown) => {
      // Which ticks, and what ran around them (tick, attempt, instance), to tell a late wake-up from a skipped tick.
      const around = deliveries.filter((d) => d.tick >= from - 4 * EVERY).map((d) => `${d.tick - from}#${d.attempt}@${d.instance}`);
      throw new Error(
        `${(error as Error).message}; missing ticks (ms after ${from}): ${missing()
          .map((t) => t - from)
          .join(', ')}; ran: ${around.join(' ')}`,
      );
    });
    return deliveries.filter((delivery) => delivery.tick <= to);
  }

  const onGrid = (ms: number) => Math.ceil(ms / EVERY) * EVERY;

  /** A tick is held in a handler: returns it and the tick queued after it (enqueued when it was claimed). */
  async function holdATick(): Promise<{ held: number; queued: number; gate: Deferred<void> }> {
    const gate = deferred();
    holdNext = { gate };
    const held = await waitFor(() => holdNext?.tick ?? false, 15_000, 'a tick to be held in its handler');
    const [info] = await waitFor(
      async () => {
        const listed = await apps[0].queue.listRepeats(TOPIC);
        return listed[0]?.nextRunAt.getTime() > held ? listed : false;
      },
      15_000,
      'the tick after the held one to be queued',
    );
    return { held, queued: info.nextRunAt.getTime(), gate };
  }

  it.each([
    ['SIGTERM (SHUTDOWN), down 1 s', 'SIGTERM', 4 * EVERY, false],
    ['SIGKILL (a crash), down longer than the running tick’s visibility', 'SIGKILL', VISIBILITY_MS + 1_500, true],
  ] as const)(
    'with an append-only file, a restart by %s while ticks are due and one runs loses no tick and runs none twice',
    async (_label, signal, downtimeMs, mayBeRedelivered) => {
      // 'all': the outage plus reconnection may exceed MISSED_TICK_AFTER_MS on a loaded machine; every
      // tick queued or due during it must still run, once.
      await startInstances(['--appendonly', 'yes', '--appendfsync', 'always'], 'all');
      await waitFor(() => ticksRun(deliveries).length >= 4, 30_000, 'four ticks before the restart');
      const { held, queued, gate } = await holdATick();
      expect(queued).toBe(held + EVERY);
      await own.server.restart({ signal, downtimeMs });
      const restartedAt = await own.answering();
      if (mayBeRedelivered) {
        // Its visibility could not be renewed while Redis was down: the next claim of any consumer
        // takes it back and delivers it again, as a later attempt, while the first handler still runs
        // (unless the holder's renewal reaches Redis first and keeps it: both are at-least-once; the
        // handler is held for a while so that the redelivery, when it comes, is checked).
        await holdsWithin(() => deliveries.some((d) => d.tick === held && d.attempt > 1), 10_000);
      }
      gate.resolve();
      // The schedule is still there (the append-only file kept it), and goes on: every tick from the
      // first to six after the restart runs.
      const checked = await settled(ticksRun(deliveries)[0], onGrid(restartedAt) + 6 * EVERY, 'every tick up to six after the restart');
      await Promise.all(consumers.map((consumer) => consumer.close()));

      // In flight around the outage: the held tick; a tick a consumer claimed as Redis went down (its
      // reply lost with the connection); and a tick claimed by a command queued during the outage and
      // sent on reconnection, which the consumer counts unconfirmed (sent too long ago) and lets go.
      // Each is taken back after its visibility and first delivered as a later attempt.
      const inFlight: number[] = [];
      for (let tick = held; tick <= onGrid(restartedAt) + 2 * EVERY; tick += EVERY) inFlight.push(tick);
      expect(breaches(checked, { inFlight })).toEqual([]);
      const ticks = ticksRun(checked);
      // The tick queued before the restart ran, and so did each tick due while Redis was down.
      expect(ticks).toContain(queued);
      expect(ticks.filter((tick) => tick > queued && tick < restartedAt).length).toBeGreaterThanOrEqual(3);
      // A redelivery of the held tick (its visibility lapsed during the outage) is a later attempt of the same tick, never a second tick.
      expect(checked.filter((delivery) => delivery.tick === held && delivery.attempt === 1)).toHaveLength(1);
      expect(await apps[0].queue.listRepeats(TOPIC)).toHaveLength(1);
    },
    120_000,
  );

  it(
    "with an append-only file and catchUp 'latest', an outage longer than the missed-tick threshold " +
      'runs the latest missed tick, then goes on',
    async () => {
      const downtimeMs = MISSED_TICK_AFTER_MS + 8 * EVERY;
      await startInstances(['--appendonly', 'yes', '--appendfsync', 'always'], 'latest');
      await waitFor(() => ticksRun(deliveries).length >= 3, 30_000, 'three ticks before the restart');
      const downSince = await own.now();
      await own.server.restart({ signal: 'SIGTERM', downtimeMs });
      const restartedAt = await own.answering();
      const resumed = await waitFor(
        () => ticksRun(deliveries).find((tick) => tick > downSince + EVERY) ?? false,
        60_000,
        'a tick after the outage',
      );
      const checked = await settled(resumed, Math.max(resumed, onGrid(restartedAt)) + 4 * EVERY, 'four ticks after the restart');
      await Promise.all(consumers.map((consumer) => consumer.close()));

      // The tick queued when Redis stopped is at most one period ahead; every later one is computed
      // after the outage. Redis was down from downSince to downSince + downtimeMs at least, so the
      // ticks up to downtimeMs - MISSED_TICK_AFTER_MS after downSince were missed by then: 'latest'
      // runs none of them, only the most recent tick past when a consumer got Redis back.
      const ticks = ticksRun(checked);
      expect(resumed).toBeGreaterThanOrEqual(downSince + downtimeMs - EVERY);
      // Nothing else is missing: before the outage every tick ran, from the catch-up tick on every tick
      // runs (the queued tick may run, or be replaced as stale by the periodic check, as documented).
      // In flight around the outage, as in the test above: a tick running or awaiting its acknowledgement
      // when Redis stopped, and ticks claimed around the reconnection; each may be delivered again as a
      // later attempt (at-least-once), never twice as the same attempt.
      const inFlight: number[] = [];
      for (let tick = onGrid(downSince) - 2 * EVERY; tick <= onGrid(restartedAt) + 2 * EVERY; tick += EVERY) inFlight.push(tick);
      expect(breaches(checked, { inFlight, mayBeMissing: (tick) => tick >= downSince - EVERY && tick < resumed })).toEqual([]);
      expect(ticks.filter((tick) => tick > downSince + EVERY && tick < resumed)).toEqual([]);
    },
    120_000,
  );

  it(
    'without persistence, the instances store the lost schedule again from their definitions: it resumes ' + 'and no tick runs twice',
    async () => {
      await startInstances([], 'latest');
      await waitFor(() => ticksRun(deliveries).length >= 3, 30_000, 'three ticks before the restart');
      const { held, gate } = await holdATick();
      await own.server.restart({ signal: 'SIGKILL', downtimeMs: 2 * EVERY });
      const restartedAt = await own.answering();
      gate.resolve();
      // Everything is gone: the periodic check (every 5 s on each instance) finds the schedule missing
      // with no removal recorded, and upserts it again.
      const [restored] = await waitFor(
        async () => {
          const listed = await apps[1].queue.listRepeats(TOPIC).catch(() => []);
          return listed.length > 0 ? listed : false;
        },
        30_000,
        'the schedule to be stored again',
      );
      expect(restored).toMatchObject({ id: TOPIC, schedule: { every: EVERY }, catchUp: 'latest' });
      expect(restored.nextRunAt.getTime()).toBeGreaterThan(restartedAt);
      const firstRestored = restored.nextRunAt.getTime();
      const checked = await settled(firstRestored, firstRestored + 4 * EVERY, 'five ticks after the restore');
      await Promise.all(consumers.map((consumer) => consumer.close()));

      // The ticks queued in the lost data do not run; the restored schedule starts after the server's
      // now, so none that ran before the loss runs again.
      expect(breaches(checked, { inFlight: [held], mayBeMissing: (tick) => tick > held && tick < firstRestored })).toEqual([]);
      expect(checked.filter((delivery) => delivery.attempt > 1)).toEqual([]);
      expect(await apps[2].queue.listRepeats(TOPIC)).toHaveLength(1);
    },
    120_000,
  );

  it('a schedule removed by one instance is not stored again by the others that upserted it', async () => {
    await startInstances([], 'latest');
    await waitFor(() => ticksRun(deliveries).length >= 2, 30_000, 'two ticks');
    expect(await apps[0].queue.removeRepeat(TOPIC)).toBe(true);
    for (const app of apps) await app.app.get(RepeatScheduler).checkAll();
    expect(await apps[1].queue.listRepeats(TOPIC)).toEqual([]);

    // Removed, then the data is lost: still not restored (the instances forgot it at the check).
    await own.server.restart({ signal: 'SIGKILL' });
    await own.answering();
    for (const app of apps) await app.app.get(RepeatScheduler).checkAll();
    expect(await apps[2].queue.listRepeats(TOPIC)).toEqual([]);

    // repeat() again makes it known again, and a later loss restores it, although the instance that
    // removed it still remembers that removal and records it again (the repeat() came after it). The
    // restoring instance restores at its second check that finds it missing, however soon.
    await apps[2].queue.repeat(TOPIC, { every: EVERY });
    await own.server.restart({ signal: 'SIGKILL' });
    await own.answering();
    apps[2].app.get(RepeatScheduler).restoreAfterMissingMs = 0;
    for (const app of [apps[2], apps[0], apps[2], apps[0]]) await app.app.get(RepeatScheduler).checkAll();
    expect(await apps[0].queue.listRepeats(TOPIC)).toHaveLength(1);
  }, 120_000);
});
