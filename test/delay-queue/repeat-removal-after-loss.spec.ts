import type { JobContext } from '../../lib/index.js';
import { RepeatScheduler } from '../../lib/delay-queue/repeat/repeat-scheduler.js';
import { parseTickJobId } from '../../lib/delay-queue/jobs/tick-job-id.js';
import { uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import { useOwnRedisPerTest } from './support/own-redis-per-test.js';

/*
 * Removals and re-creations of one schedule id by several instances, then Redis restarts empty, then
 * the instances check in an order the test sets (their periodic checks are off; each restores a
 * missing schedule at its second check, however soon): whatever the order, the schedule ends as its
 * last completed change left it. The outside review's repros of the fix for removals lost with the
 * data (a tie in the same millisecond, two removers, an instance that had seen the removal, a
 * rejected repeat(), Redis down during the checks).
 */

const TOPIC = 'loss.race';

describe('repeat() and removeRepeat() across instances, then Redis loses its data', () => {
  const own = useOwnRedisPerTest();
  let ticks: { id: string; tick: number }[] = [];
  let keyPrefix = '';

  beforeEach(async () => {
    await own.start();
    keyPrefix = uniquePrefix('rl');
  });

  afterEach(() => {
    ticks = [];
  });

  /** An instance whose checks the test runs (`check`); `consume`: it runs the topic's ticks. */
  async function instance(consume = false): Promise<DelayTestApp> {
    const app = await createDelayApp({ redis: own.server.url, keyPrefix });
    const scheduler = app.app.get(RepeatScheduler);
    scheduler.stopPeriodicChecks();
    scheduler.restoreAfterMissingMs = 0;
    own.apps.push(app);
    if (consume) {
      own.consumers.push(
        app.queue.consume(TOPIC, (_payload: unknown, job: JobContext) => {
          const tick = parseTickJobId(job.id);
          if (tick) ticks.push({ id: tick.scheduleId, tick: tick.tickMs });
        }),
      );
    }
    return app;
  }

  const check = (app: DelayTestApp) => app.app.get(RepeatScheduler).checkAll();
  const ids = async (app: DelayTestApp) => (await app.queue.listRepeats(TOPIC)).map((info) => info.id).sort();

  async function loseEverything(): Promise<void> {
    await own.server.restart({ signal: 'SIGKILL' });
    await own.answering();
  }

  /** The members of the shard's zset whose key ends with `suffix`. */
  async function zsetMembers(suffix: string): Promise<string[]> {
    const [key] = (await own.redis.keys(`${keyPrefix}*`)).filter((k) => k.endsWith(suffix));
    return key ? own.redis.zrange(key, '0', '-1') : [];
  }

  it.each(['remover first', 'definer first'] as const)(
    'a repeat() right after a removal on another instance wins over it, also in the same server millisecond (%s)',
    async (order) => {
      const remover = await instance();
      const definer = await instance();
      const names = Array.from({ length: 40 }, (_, i) => `s${i}`);
      for (const id of names) {
        await remover.queue.removeRepeat(TOPIC, id);
        await definer.queue.repeat(TOPIC, { every: 60_000 }, { id });
      }
      await loseEverything();
      const sequence =
        order === 'remover first' ? [remover, definer, definer, remover, definer] : [definer, definer, remover, definer, remover];
      for (const app of sequence) await check(app);
      expect(await ids(definer)).toEqual([...names].sort());
    },
    60_000,
  );

  it('two removers: the later removal is the one that counts, though the earlier remover records its own first', async () => {
    const definer = await instance(true);
    const first = await instance();
    const second = await instance();
    await definer.queue.repeat(TOPIC, { every: 250 }, { id: 'x' });
    expect(await first.queue.removeRepeat(TOPIC, 'x')).toBe(true);
    await definer.queue.repeat(TOPIC, { every: 250 }, { id: 'x' }); // between the two removals
    expect(await second.queue.removeRepeat(TOPIC, 'x')).toBe(true); // the last change
    const removedAt = await own.now();

    await loseEverything();
    for (const app of [first, second, definer, definer, first, second, definer]) await check(app);
    expect(await ids(definer)).toEqual([]);
    expect(await zsetMembers(':repeat-removed')).toEqual(['x']);
    expect(ticks.filter((t) => t.id === 'x' && t.tick > removedAt)).toEqual([]);
  }, 60_000);

  it('an instance that saw the removal forgets the schedule at once: a loss afterwards gives it nothing to restore', async () => {
    const definer = await instance(true);
    const remover = await instance();
    await definer.queue.repeat(TOPIC, { every: 250 }, { id: 'x' });
    expect(await remover.queue.removeRepeat(TOPIC, 'x')).toBe(true);
    const removedAt = await own.now();
    await check(definer); // finds it missing with its removal recorded

    await loseEverything();
    // The definer checks before the remover records its removal again.
    for (const app of [definer, definer, definer]) await check(app);
    expect(await ids(definer)).toEqual([]);
    await check(remover);
    expect(await ids(definer)).toEqual([]);
    expect(ticks.filter((t) => t.id === 'x' && t.tick > removedAt)).toEqual([]);
  }, 60_000);

  it('a repeat() rejected while Redis is down does not cancel the removal made before it', async () => {
    const app = await instance();
    await app.queue.repeat(TOPIC, { every: 250 }, { id: 'x' });
    expect(await app.queue.removeRepeat(TOPIC, 'x')).toBe(true);
    let bringBack!: () => void;
    const restarted = own.server.restart({ signal: 'SIGKILL', until: new Promise<void>((resolve) => (bringBack = resolve)) });
    await waitFor(
      () =>
        app.queue.repeat(TOPIC, { every: 250 }, { id: 'x' }).then(
          () => false as const,
          () => true,
        ),
      30_000,
      'repeat() to be rejected while Redis is down',
    );
    bringBack();
    await restarted;
    await waitFor(async () => (await ids(app)) && true, 30_000, 'the instance to reach Redis again', { retryErrors: true });
    for (let i = 0; i < 3; i++) await check(app);
    expect(await ids(app)).toEqual([]);
  }, 60_000);

  type Setup = (apps: Record<string, DelayTestApp>) => Promise<void>;
  const cases: [string, string[], Setup, string[]][] = [
    [
      'one remover removes, another instance re-creates, the remover removes again (cron): removed',
      ['x', 'a'],
      async ({ x, a }) => {
        await x.queue.repeat(TOPIC, { cron: '* * * * * *' }, { id: 'k' });
        await a.queue.removeRepeat(TOPIC, 'k');
        await x.queue.repeat(TOPIC, { cron: '* * * * * *' }, { id: 'k' });
        await a.queue.removeRepeat(TOPIC, 'k');
      },
      [],
    ],
    [
      'a removal, then repeat() with another definition on a third instance: stored',
      ['x', 'a', 'y'],
      async ({ x, a, y }) => {
        await x.queue.repeat(TOPIC, { every: 1000 }, { id: 'k' });
        await a.queue.removeRepeat(TOPIC, 'k');
        await y.queue.repeat(TOPIC, { every: 500 }, { id: 'k' });
      },
      ['k'],
    ],
    [
      'repeat() with another definition, then a removal on a third instance: removed',
      ['x', 'a', 'y'],
      async ({ x, a, y }) => {
        await x.queue.repeat(TOPIC, { every: 1000 }, { id: 'k' });
        await y.queue.repeat(TOPIC, { every: 500 }, { id: 'k' });
        await a.queue.removeRepeat(TOPIC, 'k');
      },
      [],
    ],
    [
      'the same definition on two instances, a removal, then repeat() by one of them: stored',
      ['x', 'a', 'y'],
      async ({ x, a, y }) => {
        await x.queue.repeat(TOPIC, { every: 500 }, { id: 'k' });
        await y.queue.repeat(TOPIC, { every: 500 }, { id: 'k' });
        await a.queue.removeRepeat(TOPIC, 'k');
        await y.queue.repeat(TOPIC, { every: 500 }, { id: 'k' });
      },
      ['k'],
    ],
    [
      'an instance removes its own schedule that another instance defined too (cron): removed',
      ['x', 'y'],
      async ({ x, y }) => {
        await x.queue.repeat(TOPIC, { cron: '*/2 * * * * *' }, { id: 'k' });
        await y.queue.repeat(TOPIC, { cron: '*/2 * * * * *' }, { id: 'k' });
        await x.queue.removeRepeat(TOPIC, 'k');
      },
      [],
    ],
  ];

  /** Every order of `names`. */
  function orders(names: readonly string[]): string[][] {
    if (names.length <= 1) return [[...names]];
    return names.flatMap((name, i) => orders([...names.slice(0, i), ...names.slice(i + 1)]).map((rest) => [name, ...rest]));
  }

  it.each(cases)(
    '%s, in every order of checks',
    async (_name, names, setup, expected) => {
      const outcomes: string[] = [];
      for (const order of orders(names)) {
        const byName: Record<string, DelayTestApp> = {};
        for (const name of names) byName[name] = await instance();
        await setup(byName);
        await loseEverything();
        // Each instance checks twice in this order (the second restores), then everyone twice more.
        for (let round = 0; round < 4; round++) for (const name of order) await check(byName[name]);
        outcomes.push(`${order.join(',')}: ${JSON.stringify(await ids(byName[names[0]]))}`);
        await Promise.all(Object.values(byName).map((app) => app.close()));
        own.apps.splice(0);
      }
      expect(outcomes).toEqual(orders(names).map((order) => `${order.join(',')}: ${JSON.stringify(expected)}`));
    },
    120_000,
  );

  it(
    'checks while Redis is down settle without an unhandled rejection; once it is back the removals ' +
      'are recorded again (451, over several batches)',
    async () => {
      const rejections: unknown[] = [];
      const onRejection = (error: unknown) => rejections.push(error);
      process.on('unhandledRejection', onRejection);
      try {
        const definer = await instance();
        const remover = await instance();
        await definer.queue.repeat(TOPIC, { every: 250 }, { id: 'x' });
        for (let i = 0; i < 450; i++) await remover.queue.removeRepeat(TOPIC, `gone${i}`);
        await remover.queue.removeRepeat(TOPIC, 'x');
        let bringBack!: () => void;
        const restarted = own.server.restart({ signal: 'SIGKILL', until: new Promise<void>((resolve) => (bringBack = resolve)) });
        await waitFor(
          () =>
            own.now().then(
              () => false,
              () => true,
            ),
          30_000,
          'Redis to be down',
        );
        const results = await Promise.allSettled([check(remover), check(definer), check(definer)]);
        expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
        bringBack();
        await restarted;
        for (const app of [remover, definer])
          await waitFor(async () => (await ids(app)) && true, 30_000, 'the instances to reach Redis again', { retryErrors: true });
        for (const app of [remover, definer, definer]) await check(app);
        expect(await ids(definer)).toEqual([]);
        expect((await zsetMembers(':repeat-removed')).length).toBe(451);
        expect(rejections).toEqual([]);
      } finally {
        process.off('unhandledRejection', onRejection);
      }
    },
    90_000,
  );

  it('repeat() racing removeRepeat() leaves no definition time behind for a schedule that is not stored', async () => {
    const remover = await instance();
    const definer = await instance();
    for (let i = 0; i < 200; i++) {
      const id = `r${i}`;
      await definer.queue.repeat(TOPIC, { every: 60_000 }, { id });
      await Promise.all([definer.queue.repeat(TOPIC, { every: 60_000 }, { id }), remover.queue.removeRepeat(TOPIC, id)]);
    }
    const stored = await ids(remover);
    expect((await zsetMembers(':repeat-defined')).filter((id) => !stored.includes(id))).toEqual([]);
  }, 90_000);

  /** Waits until each of `instances` reaches Redis again, so that every check of the order the test sets runs. */
  async function reachAgain(instances: readonly DelayTestApp[]): Promise<void> {
    for (const app of new Set(instances)) {
      await waitFor(async () => (await ids(app)) && true, 30_000, 'the instances to reach Redis again', { retryErrors: true });
    }
  }

  it.each([
    ['read', 'the older instance first'],
    ['read', 'the newer instance first'],
    ['not yet read', 'the older instance first'],
    ['not yet read', 'the newer instance first'],
  ] as const)(
    'a later repeat() with another definition on another instance, %s by the older instance, wins after a loss (%s checks)',
    async (read, first) => {
      const older = await instance();
      const newer = await instance();
      await older.queue.repeat(TOPIC, { every: 60_000 }, { id: 'x', payload: { v: 1 } });
      await check(older);
      await newer.queue.repeat(TOPIC, { every: 30_000 }, { id: 'x', payload: { v: 2 } }); // the last change
      if (read === 'read') {
        await check(older); // reads the newer definition stored: its own is no longer current
        await check(newer);
      }

      await loseEverything();
      // Unread, the older instance may restore its definition first; the newer one's later definition replaces it.
      const sequence =
        first === 'the older instance first' ? [older, older, newer, newer, older, newer] : [newer, newer, older, older, newer, older];
      await reachAgain(sequence);
      for (const app of sequence) await check(app);
      expect((await newer.queue.listRepeats(TOPIC)).map((s) => ({ id: s.id, schedule: s.schedule }))).toEqual([
        { id: 'x', schedule: { every: 30_000 } },
      ]);
    },
    60_000,
  );

  it('a cron schedule with a time zone: a removal just before the loss stays removed, a re-create after its removal wins', async () => {
    const definer = await instance(true);
    const remover = await instance();
    const schedule = { cron: '*/2 * * * * *', timeZone: 'America/St_Johns' };
    await definer.queue.repeat(TOPIC, schedule, { id: 'gone' });
    await definer.queue.repeat(TOPIC, schedule, { id: 'back' });
    await check(definer);
    expect(await remover.queue.removeRepeat(TOPIC, 'gone')).toBe(true);
    expect(await remover.queue.removeRepeat(TOPIC, 'back')).toBe(true);
    await remover.queue.repeat(TOPIC, schedule, { id: 'back' }); // the last change of 'back'

    await loseEverything();
    const sequence = [definer, definer, remover, definer, remover, definer];
    await reachAgain(sequence);
    for (const app of sequence) await check(app);
    expect(await ids(definer)).toEqual(['back']);
  }, 60_000);

  it(
    'an instance that saw a removal does not restore the schedule after a loss, also when the remover ' + 'was replaced by a new process',
    async () => {
      const definer = await instance();
      const remover = await instance();
      await definer.queue.repeat(TOPIC, { every: 60_000 }, { id: 'x' });
      await check(definer);
      expect(await remover.queue.removeRepeat(TOPIC, 'x')).toBe(true);
      await check(definer); // finds it missing with its removal recorded
      await remover.close();
      own.apps.splice(own.apps.indexOf(remover), 1);

      await loseEverything();
      const newRemover = await instance(); // knows nothing of the removal
      const sequence = [definer, definer, newRemover, definer];
      await reachAgain(sequence);
      for (const app of sequence) await check(app);
      expect(await ids(definer)).toEqual([]);
    },
    60_000,
  );
});
