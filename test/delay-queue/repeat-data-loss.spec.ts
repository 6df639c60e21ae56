import type { Consumer, JobContext } from '../../lib/index.js';
import { RepeatScheduler } from '../../lib/delay-queue/repeat/repeat-scheduler.js';
import { parseTickJobId } from '../../lib/delay-queue/jobs/tick-job-id.js';
import { uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import { useOwnRedisPerTest } from './support/own-redis-per-test.js';

/*
 * Several schedules on one topic, defined by several instances, when Redis loses all its data (its
 * own redis-server, restarted without persistence): every schedule an instance defined comes back,
 * whichever instance checks first and in whatever order, also across a rolling restart of the
 * instances; a schedule removed (before the loss, also just before it, or racing the restore) stays
 * removed, and a repeat() after a removal wins over it. Every delivery is recorded here and judged
 * per schedule: each tick runs once. Tests that order the checks themselves let an instance restore
 * at the second check that finds a schedule missing (`quick`); the others run on the periodic check.
 */

const EVERY = 250;
const TOPIC = 'loss.beat';

interface Delivery {
  readonly id: string;
  readonly tick: number;
  readonly attempt: number;
}

describe('repeat() after Redis lost its data', () => {
  const own = useOwnRedisPerTest();
  /** The consumer of each running instance. */
  const consumers = new Map<DelayTestApp, Consumer>();
  let deliveries: Delivery[] = [];
  let keyPrefix = '';

  beforeEach(async () => {
    await own.start();
    keyPrefix = uniquePrefix('rl');
  });

  afterEach(() => {
    consumers.clear();
    deliveries = [];
  });

  /**
   * An instance that repeat()s `ids` on the topic (as its code would, at start) and consumes the
   * topic; `quick`: it restores a missing schedule at its second check, however soon.
   */
  async function instance(ids: readonly string[], quick = true): Promise<DelayTestApp> {
    const app = await createDelayApp({ redis: own.server.url, keyPrefix });
    if (quick) app.app.get(RepeatScheduler).restoreAfterMissingMs = 0;
    own.apps.push(app);
    for (const id of ids) await app.queue.repeat(TOPIC, { every: EVERY }, { id });
    const consumer = app.queue.consume(TOPIC, (_payload: unknown, job: JobContext) => {
      const tick = parseTickJobId(job.id)!;
      deliveries.push({ id: tick.scheduleId, tick: tick.tickMs, attempt: job.attempt });
    });
    own.consumers.push(consumer);
    consumers.set(app, consumer);
    return app;
  }

  /** Stops an instance (its consumer, then the application), as a rolling restart does. */
  async function retire(app: DelayTestApp): Promise<void> {
    await consumers.get(app)!.close();
    consumers.delete(app);
    await app.close();
  }

  const check = (app: DelayTestApp) => app.app.get(RepeatScheduler).checkAll();
  const ids = async (app: DelayTestApp) => (await app.queue.listRepeats(TOPIC)).map((info) => info.id).sort();
  const ticksOf = (id: string) => [...new Set(deliveries.filter((d) => d.id === id).map((d) => d.tick))].sort((a, b) => a - b);

  /** Kills Redis and starts it again empty; resolves with its clock once it answers. */
  async function loseEverything(): Promise<number> {
    await own.server.restart({ signal: 'SIGKILL' });
    return own.answering();
  }

  /**
   * Each of `live` runs every tick from its first one after the loss to four more, each tick once
   * (no Redis fault meanwhile); no tick of `removed` after `removedAt` (server ms) ran.
   */
  async function expectEachTickOnce(
    live: readonly string[],
    removed: readonly string[],
    lostAt: number,
    removedAt = lostAt,
  ): Promise<void> {
    for (const id of live) {
      await waitFor(() => ticksOf(id).filter((tick) => tick > lostAt).length >= 5, 60_000, `five ticks of ${id} after the loss`);
    }
    await Promise.all([...consumers.values()].map((consumer) => consumer.close()));
    for (const id of live) {
      const after = ticksOf(id).filter((tick) => tick > lostAt);
      const first = after[0];
      const last = after[after.length - 1];
      for (let tick = first; tick <= last; tick += EVERY) expect({ id, tick, ran: after.includes(tick) }).toEqual({ id, tick, ran: true });
    }
    const byTick = new Map<string, number[]>();
    for (const d of deliveries) byTick.set(`${d.id}@${d.tick}`, [...(byTick.get(`${d.id}@${d.tick}`) ?? []), d.attempt]);
    // No fault hits a running tick after the loss: each tick once, as its first attempt.
    const twice = [...byTick].filter(([key, attempts]) => attempts.length > 1 && Number(key.split('@')[1]) > lostAt);
    expect(twice).toEqual([]);
    for (const id of removed)
      expect({ id, ranAfterRemoval: ticksOf(id).filter((tick) => tick > removedAt) }).toEqual({ id, ranAfterRemoval: [] });
  }

  it('every schedule comes back, whichever instance checks first; a removal racing the restore stays removed; each tick once', async () => {
    const a = await instance(['a', 'b', 'c', 'r']);
    const b = await instance(['b', 'r']);
    const c = await instance(['c', 'd']);
    await waitFor(() => ['a', 'b', 'c', 'd', 'r'].every((id) => ticksOf(id).length >= 2), 30_000, 'two ticks of every schedule');
    expect(await ids(c)).toEqual(['a', 'b', 'c', 'd', 'r']);

    const lostAt = await loseEverything();
    // Each instance's first check finds its schedules missing; b's second check restores some while
    // another instance removes `r`, which it did not define: whichever lands first, `r` stays removed.
    for (const app of [a, b, c]) await check(app);
    await Promise.all([check(b), c.queue.removeRepeat(TOPIC, 'r')]);
    const removedAt = await own.now();
    await check(c);
    await check(a);
    await check(b);
    expect(await ids(a)).toEqual(['a', 'b', 'c', 'd']);
    // Later checks change nothing.
    for (const app of [c, b, a]) await check(app);
    expect(await ids(b)).toEqual(['a', 'b', 'c', 'd']);
    await expectEachTickOnce(['a', 'b', 'c', 'd'], ['r'], lostAt, removedAt);
  }, 120_000);

  it('one instance restores all of its schedules, not only the first it checks', async () => {
    const a = await instance(['a', 'b', 'c'], false);
    await waitFor(() => ['a', 'b', 'c'].every((id) => ticksOf(id).length >= 2), 30_000, 'two ticks of every schedule');
    const lostAt = await loseEverything();
    // The periodic check (every 5 s; it restores a schedule missing for over one interval), not a call of the test.
    await waitFor(async () => (await ids(a).catch(() => [])).length === 3 || false, 30_000, 'a, b and c stored again');
    await check(a);
    expect(await ids(a)).toEqual(['a', 'b', 'c']);
    await expectEachTickOnce(['a', 'b', 'c'], [], lostAt);
  }, 120_000);

  it(
    'a removal made just before the loss stays removed, though the instance that defined the schedule ' +
      'had not checked since (periodic checks only)',
    async () => {
      const a = await instance(['x', 'k'], false);
      const b = await instance([], false);
      await waitFor(() => ['x', 'k'].every((id) => ticksOf(id).length >= 2), 30_000, 'two ticks of every schedule');
      expect(await b.queue.removeRepeat(TOPIC, 'x')).toBe(true);
      const removedAt = await own.now();
      // Redis loses its data before a's next check: the removal's record goes with it. b, which made
      // the removal, records it again at its next check; a restores only what was not removed.
      const lostAt = await loseEverything();
      await waitFor(
        async () => (await ids(a).catch((): string[] => [])).includes('k') || false,
        40_000,
        'k stored again by the periodic check',
      );
      for (const app of [a, b, a]) await check(app);
      expect(await ids(a)).toEqual(['k']);
      await expectEachTickOnce(['k'], ['x'], lostAt, removedAt);
    },
    120_000,
  );

  it(
    'a restore by an instance that had not seen a removal is undone by the instance that removed it; ' +
      'a repeat() after the removal wins over it',
    async () => {
      const stale = await instance(['x', 'y']);
      const remover = await instance([]);
      await waitFor(() => ['x', 'y'].every((id) => ticksOf(id).length >= 2), 30_000, 'two ticks of every schedule');
      expect(await remover.queue.removeRepeat(TOPIC, 'x')).toBe(true);
      expect(await remover.queue.removeRepeat(TOPIC, 'y')).toBe(true);
      // Another instance defines y again after its removal.
      const later = await instance(['y']);
      const removedAt = await own.now();

      await loseEverything();
      // The stale instance restores both before the remover checks (a remover that was slow).
      for (const app of [stale, later, stale, later]) await check(app);
      expect(await ids(stale)).toEqual(['x', 'y']);
      // The remover's check records its removals again: x, known only from before its removal, goes;
      // y, defined after the removal, stays.
      await check(remover);
      expect(await ids(remover)).toEqual(['y']);
      for (const app of [stale, later, remover, stale]) await check(app);
      expect(await ids(stale)).toEqual(['y']);
      await waitFor(() => ticksOf('y').filter((tick) => tick > removedAt).length >= 3, 30_000, 'ticks of y after the loss');
      // x's restored schedule may have ticked before the remover's check; none after it.
      const undoneAt = await own.now();
      await waitFor(() => ticksOf('y').filter((tick) => tick > undoneAt).length >= 3, 30_000, 'three more ticks of y');
      expect(ticksOf('x').filter((tick) => tick > undoneAt)).toEqual([]);
    },
    120_000,
  );

  it(
    'after a rolling restart that follows the loss, the instances that defined a schedule restore it; ' +
      'a removal before the loss stays removed',
    async () => {
      const a = await instance(['a', 'b', 'c']);
      const gone = await instance(['a', 'x']);
      await waitFor(() => ['a', 'b', 'c', 'x'].every((id) => ticksOf(id).length >= 2), 30_000, 'two ticks of every schedule');
      expect(await a.queue.removeRepeat(TOPIC, 'x')).toBe(true);
      await check(gone); // it sees the removal before the loss

      const lostAt = await loseEverything();
      // Rolling restart: the second instance is replaced by one that defines `a` only (its other
      // schedules were made at run time by a process that is gone); it starts before any check.
      await retire(gone);
      const fresh = await instance(['a']);
      for (const app of [fresh, a, fresh, a]) await check(app);
      expect(await ids(fresh)).toEqual(['a', 'b', 'c']);
      // And the first instance restarts too: its successor defines the same schedules at start.
      const successor = await instance(['a', 'b', 'c']);
      await retire(a);
      await check(successor);
      await check(fresh);
      expect(await ids(successor)).toEqual(['a', 'b', 'c']);
      await expectEachTickOnce(['a', 'b', 'c'], ['x'], lostAt);
    },
    120_000,
  );
});
