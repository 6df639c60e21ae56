import { InvalidOptionsError } from '../../lib/index.js';
import { uniquePrefix } from '../support/test-app.js';
import type { DelayTestApp } from './support/delay-test-app.js';
import { useDelayInstances, type DelayInstances } from './support/delay-instances.js';
import { busiestWindow } from './support/busiest-window.js';
import { consumerLookedTwice } from './support/consumer-looked-twice.js';
import { deferred, waitFor } from '../support/timing.js';

describe('DelayQueueService: pause/resume and rate limits', () => {
  const apps = useDelayInstances('pr');

  function instances(
    n: number,
    keyPrefix = uniquePrefix('pr'),
    options: Parameters<DelayInstances['start']>[1] = {},
  ): Promise<DelayTestApp[]> {
    return apps.start(n, { ...options, keyPrefix });
  }

  describe('pause and resume', () => {
    it('stops every instance from claiming, lets running jobs finish, and resumes at once', async () => {
      const keyPrefix = uniquePrefix('pause');
      const [a, b] = await instances(2, keyPrefix);
      const seen: string[] = [];
      const running = deferred();
      const finish = deferred();
      const handler = async (payload: string) => {
        seen.push(payload);
        if (payload === 'long') {
          running.resolve();
          await finish.promise;
        }
      };
      a.queue.consume('p.topic', handler);
      b.queue.consume('p.topic', handler);
      await a.queue.schedule('p.topic', 'long');
      await running.promise;
      expect(await a.queue.pause('p.topic')).toBe(true);
      expect(await b.queue.pause('p.topic')).toBe(false);
      await b.queue.scheduleMany('p.topic', [{ payload: 'x' }, { payload: 'y' }]);
      finish.resolve();
      await waitFor(async () => (await a.queue.stats('p.topic')).active === 0, 5_000, 'the running job to finish');
      await consumerLookedTwice(apps.redis(), b.queue, keyPrefix, 'p.topic');
      expect(seen).toEqual(['long']);
      expect(await b.queue.stats('p.topic')).toMatchObject({ due: 2, active: 0, paused: true });

      expect(await b.queue.resume('p.topic')).toBe(true);
      expect(await a.queue.resume('p.topic')).toBe(false);
      await waitFor(() => seen.length === 3, 5_000, 'the paused jobs to run after resume');
      expect(seen.slice(1).sort()).toEqual(['x', 'y']);
      expect(await a.queue.stats('p.topic')).toMatchObject({ paused: false });
    });

    it('is kept in Redis: an instance started later obeys it', async () => {
      const keyPrefix = uniquePrefix('pause');
      const [first] = await instances(1, keyPrefix);
      await first.queue.pause('p.kept');
      await first.close();
      const [later] = await instances(1, keyPrefix);
      const seen: string[] = [];
      later.queue.consume<string>('p.kept', (payload) => void seen.push(payload));
      await later.queue.schedule('p.kept', 'waits');
      await consumerLookedTwice(apps.redis(), later.queue, keyPrefix, 'p.kept');
      expect(seen).toEqual([]);
      expect(await later.queue.stats('p.kept')).toMatchObject({ paused: true, due: 1 });
      await later.queue.resume('p.kept');
      await waitFor(() => seen.length === 1, 5_000, 'the job after resume');
    });
  });

  describe('rate limit', () => {
    it('never lets more than max handler starts into any window of duration, over three instances', async () => {
      const keyPrefix = uniquePrefix('rate');
      const insts = await instances(3, keyPrefix);
      const claims: number[] = [];
      const attempts: number[] = [];
      for (const t of insts) {
        t.queue.consume(
          'r.topic',
          (_payload, job) => {
            claims.push(job.claimedAt.getTime());
            attempts.push(job.attempt);
          },
          { concurrency: 8, rateLimit: { max: 5, duration: 400 } },
        );
      }
      await insts[0].queue.scheduleMany(
        'r.topic',
        Array.from({ length: 30 }, (_, i) => ({ payload: i })),
      );
      await waitFor(() => claims.length === 30, 20_000, 'every job to run');
      // Never over the limit, and the limit is used: the fullest window holds exactly max (a bound on
      // the Redis clock, not on how fast a loaded machine delivers).
      expect(busiestWindow(claims, 400)).toBe(5);
      // Over the limit means waiting, not failing: every job ran on its first attempt.
      expect(attempts.every((n) => n === 1)).toBe(true);
      // 30 jobs at 5 per 400 ms need at least 5 full windows after the first.
      const span = Math.max(...claims) - Math.min(...claims);
      expect(span).toBeGreaterThanOrEqual(5 * 400);
    });

    it('splits max over the shards of a sharded topic and refuses fewer than one per shard', async () => {
      const options = { delayQueue: { topics: { 'r.sharded': { shards: 2 }, 'r.sharded.few': { shards: 2 } } } };
      const [t] = await instances(1, uniquePrefix('rate'), options);
      const claims: number[] = [];
      t.queue.consume('r.sharded', (_payload, job) => void claims.push(job.claimedAt.getTime()), {
        concurrency: 4,
        rateLimit: { max: 3, duration: 300 },
      });
      await t.queue.scheduleMany(
        'r.sharded',
        Array.from({ length: 12 }, (_, i) => ({ payload: i, id: `s${i}` })),
      );
      await waitFor(() => claims.length === 12, 20_000, 'every job');
      expect(busiestWindow(claims, 300)).toBeLessThanOrEqual(3);
      expect(() => t.queue.consume('r.sharded.few', () => undefined, { rateLimit: { max: 1, duration: 100 } })).toThrow(/2 shards/);
    });

    it('refuses a malformed rateLimit', async () => {
      const [t] = await instances(1);
      const bad: unknown[] = [
        {},
        { max: 0, duration: 100 },
        { max: 5 },
        { max: 5, duration: -1 },
        { max: 5, duration: 100, burst: 2 },
        5,
        null,
      ];
      for (const rateLimit of bad) {
        expect(() => t.queue.consume('r.bad', () => undefined, { rateLimit: rateLimit as { max: number; duration: number } })).toThrow(
          InvalidOptionsError,
        );
      }
      expect(() => t.queue.consume('r.bad', () => undefined, { rateLimit: { max: 5, duration: 100, burst: 1 } as never })).toThrow(
        /rateLimit\.burst/,
      );
    });
  });
});
