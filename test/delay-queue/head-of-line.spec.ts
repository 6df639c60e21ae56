import type { Redis } from 'ioredis';
import type { Consumer, DelayQueueService, JobContext } from '../../lib/index.js';
import { rawRedis } from '../support/test-app.js';
import { deferred, holdsWithin, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';

failOnUnhandledRejections({ after: 'each' });

/**
 * Issue 23, defect 6 (head-of-line blocking): a consumer whose handler slots are all busy must not
 * keep due jobs in its prefetch buffer while another consumer could run them now. Two instances
 * share one queue; one runs long handlers, the other is idle. Every due job must start within
 * LATE_BOUND_MS of the moment it could have run on the idle instance (before the fix: only once the
 * long handler ended, ~10 s later), on its first attempt, and a redelivery must carry a higher fence.
 */
describe('delay queue: a busy consumer does not sit on due jobs another consumer could run (issue 23, defect 6)', () => {
  /** Generous for a loaded 2-core machine, far below the handler length the defect waited for. */
  const LATE_BOUND_MS = 1_500;
  /** How long a "long" handler runs at most: it ends early once the test has what it waits for. */
  const LONG_MS = 12_000;

  let a: DelayTestApp;
  let b: DelayTestApp;
  let redis: Redis;
  const consumers: Consumer[] = [];

  beforeEach(async () => {
    a = await createDelayApp();
    b = await createDelayApp({ keyPrefix: a.keyPrefix });
    redis = rawRedis();
  });
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.close({ timeout: 1_000 })));
    await a.close();
    await b.close();
    redis.disconnect();
  });

  interface Start {
    readonly by: 'a' | 'b';
    readonly name: string;
    readonly atMs: number;
    readonly lateMs: number;
    readonly attempt: number;
    readonly token: bigint;
  }

  /**
   * A consumer whose handler records every start and, for the payloads in `long`, runs until
   * `release` resolves (at most LONG_MS).
   */
  function consume(
    by: 'a' | 'b',
    queue: DelayQueueService,
    topic: string,
    starts: Start[],
    long: (name: string) => boolean,
    release: Promise<void>,
    concurrency = 1,
  ): void {
    const consumer = queue.consume<string>(
      topic,
      async (name: string, job: JobContext) => {
        starts.push({
          by,
          name,
          atMs: Date.now(),
          lateMs: Date.now() - job.scheduledAt.getTime(),
          attempt: job.attempt,
          token: BigInt(job.fencingToken),
        });
        if (!long(name)) return;
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([release, new Promise<void>((resolve) => (timer = setTimeout(resolve, LONG_MS)))]);
        clearTimeout(timer);
      },
      { concurrency, shutdownTimeout: 1_000 },
    );
    consumers.push(consumer);
  }

  const blockedOnMarker = async (count: number) => {
    await waitFor(
      async () => ((await redis.client('LIST')) as string).split('\n').filter((line) => / cmd=bzpopmin/.test(line)).length >= count,
      10_000,
      `${count} connection(s) parked on the marker`,
    );
  };

  const startOf = (starts: Start[], name: string) => starts.find((s) => s.name === name);

  it('a job due together with a long one runs on the idle consumer, not in the busy one’s buffer', async () => {
    const starts: Start[] = [];
    const release = deferred();
    const isLong = (name: string) => name === 'H';
    // `a` parks on the marker first, so the producer's marker wakes it (BZPOPMIN serves the longest waiter).
    consume('a', a.queue, 'hol.together', starts, isLong, release.promise);
    await blockedOnMarker(1);
    consume('b', b.queue, 'hol.together', starts, isLong, release.promise);
    await blockedOnMarker(2);
    await a.queue.scheduleMany('hol.together', [{ payload: 'H' }, { payload: 'J' }]);

    const j = await waitFor(() => startOf(starts, 'J'), LONG_MS + 5_000, 'J to start');
    const h = startOf(starts, 'H')!;
    release.resolve();
    // Before the fix: J waited in H's consumer's prefetch buffer until H ended (~12 s).
    expect(j.lateMs).toBeLessThan(LATE_BOUND_MS);
    expect(j.by).not.toBe(h.by);
    expect([h.attempt, j.attempt]).toEqual([1, 1]);
  });

  it('jobs that fall due while a long one runs start on the idle consumer (the issue’s timing)', async () => {
    const starts: Start[] = [];
    const release = deferred();
    const isLong = (name: string) => name === 'H';
    consume('a', a.queue, 'hol.timing', starts, isLong, release.promise);
    consume('b', b.queue, 'hol.timing', starts, isLong, release.promise);
    await blockedOnMarker(2);
    const now = Date.now();
    const later = ['J1', 'J2', 'J3'];
    await a.queue.scheduleMany('hol.timing', [
      { payload: 'H', at: now + 1_500 },
      ...later.map((name, i) => ({ payload: name, at: now + 2_500 + i * 500 })),
    ]);

    await waitFor(() => later.every((name) => startOf(starts, name)), LONG_MS + 5_000, 'every J to start');
    const h = startOf(starts, 'H')!;
    release.resolve();
    for (const name of later) {
      const j = startOf(starts, name)!;
      // Before the fix: a J claimed into H's consumer's buffer started once H ended, ~10 s late.
      expect({ name, lateMs: j.lateMs, by: j.by }).toEqual({ name, lateMs: expect.any(Number), by: h.by === 'a' ? 'b' : 'a' });
      expect(j.lateMs).toBeLessThan(LATE_BOUND_MS);
      expect(j.attempt).toBe(1);
    }
  });

  it(
    'a busy consumer hands back the jobs it buffered once its handlers turn slow: no attempt lost, due ' + 'order kept, a higher fence',
    async () => {
      const starts: Start[] = [];
      const release = deferred();
      // Fast jobs first (they make the consumer prefetch), then slow ones that fill both slots.
      const slow = ['S1', 'S2', 'S3', 'S4', 'S5'];
      consume('a', a.queue, 'hol.buffered', starts, (name) => name.startsWith('S'), release.promise, 2);
      await a.queue.scheduleMany(
        'hol.buffered',
        ['F1', 'F2', 'F3', 'F4', ...slow].map((payload) => ({ payload })),
      );
      await waitFor(() => starts.filter((s) => s.name.startsWith('S')).length >= 2, 10_000, 'two slow jobs to run on a');
      // `a` claimed two more slow jobs into its buffer (S3, S4; all five are due in the same millisecond).
      // Wait for it to hand them back (before the fix it never did: this times out and b starts anyway).
      await holdsWithin(async () => (await a.queue.stats('hol.buffered')).active === 2, 3_000);

      const idleFrom = Date.now();
      consume('b', b.queue, 'hol.buffered', starts, () => false, release.promise);
      await waitFor(() => slow.every((name) => startOf(starts, name)), LONG_MS + 5_000, 'every slow job to start');
      release.resolve();
      const onA = starts.filter((s) => s.by === 'a' && s.name.startsWith('S'));
      const onB = starts.filter((s) => s.by === 'b');
      // Before the fix: S3 and S4 waited in a's buffer and started on a once its handlers ended (~12 s).
      expect(onA.map((s) => s.name)).toEqual(['S1', 'S2']);
      expect(Math.max(...onB.map((s) => s.atMs)) - idleFrom).toBeLessThan(LATE_BOUND_MS);
      // Back at their own place, ahead of S5 due in the same millisecond, each on its first attempt (a hand-back costs none).
      expect(onB.map((s) => s.name)).toEqual(['S3', 'S4', 'S5']);
      expect(onB.map((s) => s.attempt)).toEqual([1, 1, 1]);
      // A new delivery carries a fence above every one handed out before (the jobs a ran included).
      expect(onB.every((s) => onA.every((r) => s.token > r.token))).toBe(true);
      await waitFor(async () => (await a.queue.stats('hol.buffered')).active === 0, 10_000, 'every job to be acknowledged');
    },
  );
});
