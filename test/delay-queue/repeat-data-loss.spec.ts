import { Redis } from 'ioredis';
import type { Consumer, JobContext } from '../../lib/index.js';
import { RepeatScheduler } from '../../lib/delay-queue/repeat/repeat-scheduler.js';
import { parseTickJobId } from '../../lib/delay-queue/jobs/tick-job-id.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';

/*
 * Several schedules on one topic, defined by several instances, when Redis loses all its data (its
 * own redis-server, restarted without persistence): every schedule an instance defined comes back,
 * whichever instance checks first and in whatever order, also across a rolling restart of the
 * instances; a schedule removed (before the loss, or racing the restore) stays removed. Every
 * delivery is recorded here and judged per schedule: each tick runs once.
 */

const EVERY = 250;
const TOPIC = 'loss.beat';

interface Delivery {
  readonly id: string;
  readonly tick: number;
  readonly attempt: number;
}

describe('repeat() after Redis lost its data', () => {
  let server: LocalRedisServer | undefined;
  let clock: Redis | undefined;
  let apps: DelayTestApp[] = [];
  let consumers = new Map<DelayTestApp, Consumer>();
  let deliveries: Delivery[] = [];
  let keyPrefix = '';

  beforeEach(async () => {
    server = await startLocalRedisServer({ args: [] });
    clock = new Redis(server.url, { maxRetriesPerRequest: 0, retryStrategy: () => 50 });
    keyPrefix = uniquePrefix('rl');
  });

  afterEach(async () => {
    await Promise.all([...consumers.values()].map((consumer) => consumer.close().catch(() => undefined)));
    await Promise.all(apps.map((app) => app.close().catch(() => undefined)));
    clock?.disconnect();
    clock = undefined;
    await server?.stop();
    server = undefined;
    apps = [];
    consumers = new Map();
    deliveries = [];
  });

  /** An instance that repeat()s `ids` on the topic (as its code would, at start) and consumes the topic. */
  async function instance(ids: readonly string[]): Promise<DelayTestApp> {
    const app = await createDelayApp({ redis: server!.url, keyPrefix });
    apps.push(app);
    for (const id of ids) await app.queue.repeat(TOPIC, { every: EVERY }, { id });
    consumers.set(
      app,
      app.queue.consume(TOPIC, (_payload: unknown, job: JobContext) => {
        const tick = parseTickJobId(job.id)!;
        deliveries.push({ id: tick.scheduleId, tick: tick.tickMs, attempt: job.attempt });
      }),
    );
    return app;
  }

  /** Stops an instance (its consumer, then the application), as a rolling restart does. */
  async function retire(app: DelayTestApp): Promise<void> {
    await consumers.get(app)!.close();
    consumers.delete(app);
    await app.close();
    apps = apps.filter((other) => other !== app);
  }

  const check = (app: DelayTestApp) => app.app.get(RepeatScheduler).checkAll();
  const ids = async (app: DelayTestApp) => (await app.queue.listRepeats(TOPIC)).map((info) => info.id).sort();
  const ticksOf = (id: string) => [...new Set(deliveries.filter((d) => d.id === id).map((d) => d.tick))].sort((a, b) => a - b);

  async function serverNow(): Promise<number> {
    const [seconds, micros] = await clock!.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /** Kills Redis and starts it again empty; resolves with its clock once it answers. */
  async function loseEverything(): Promise<number> {
    await server!.restart({ signal: 'SIGKILL' });
    return waitFor(() => serverNow().catch(() => false as const), 30_000, 'Redis to answer again');
  }

  /**
   * Each of `live` runs every tick from its first one after the loss to four more, each tick once
   * (no Redis fault meanwhile); no tick of `removed` after `removedAt` (server ms) ran.
   */
  async function expectEachTickOnce(live: readonly string[], removed: readonly string[], lostAt: number, removedAt = lostAt): Promise<void> {
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
    for (const id of removed) expect({ id, ranAfterRemoval: ticksOf(id).filter((tick) => tick > removedAt) }).toEqual({ id, ranAfterRemoval: [] });
  }

  it('every schedule comes back, whichever instance checks first; a removal racing the restore stays removed; each tick once', async () => {
    const a = await instance(['a', 'b', 'c', 'r']);
    const b = await instance(['b', 'r']);
    const c = await instance(['c', 'd']);
    await waitFor(() => ['a', 'b', 'c', 'd', 'r'].every((id) => ticksOf(id).length >= 2), 30_000, 'two ticks of every schedule');
    expect(await ids(c)).toEqual(['a', 'b', 'c', 'd', 'r']);

    const lostAt = await loseEverything();
    // The first check restores some schedules while another instance removes `r`, which it did not
    // define: whichever lands first, `r` stays removed.
    await Promise.all([check(b), c.queue.removeRepeat(TOPIC, 'r')]);
    const removedAt = await serverNow();
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
    const a = await instance(['a', 'b', 'c']);
    await waitFor(() => ['a', 'b', 'c'].every((id) => ticksOf(id).length >= 2), 30_000, 'two ticks of every schedule');
    const lostAt = await loseEverything();
    // The periodic check (every 5 s), not a call of the test.
    await waitFor(async () => (await ids(a).catch(() => [])).length === 3 || false, 30_000, 'a, b and c stored again');
    await check(a);
    expect(await ids(a)).toEqual(['a', 'b', 'c']);
    await expectEachTickOnce(['a', 'b', 'c'], [], lostAt);
  }, 120_000);

  it('after a rolling restart that follows the loss, the instances that defined a schedule restore it; a removal before the loss stays removed', async () => {
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
    await check(fresh);
    await check(a);
    expect(await ids(fresh)).toEqual(['a', 'b', 'c']);
    // And the first instance restarts too: its successor defines the same schedules at start.
    const successor = await instance(['a', 'b', 'c']);
    await retire(a);
    await check(successor);
    await check(fresh);
    expect(await ids(successor)).toEqual(['a', 'b', 'c']);
    await expectEachTickOnce(['a', 'b', 'c'], ['x'], lostAt);
  }, 120_000);
});
