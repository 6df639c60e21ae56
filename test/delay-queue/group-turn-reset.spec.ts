import { RedisLockEvents, type JobContext } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { CancelListener } from '../../lib/delay-queue/consumer/cancel-listener.js';
import { uniquePrefix } from '../support/test-app.js';
import type { DelayTestApp } from './support/delay-test-app.js';
import { useDelayInstances, type DelayInstances } from './support/delay-instances.js';
import { deferred, waitFor } from '../support/timing.js';

describe("A group's turn and its groupConcurrency, across deployments and lost cancel notices", () => {
  const instances = useDelayInstances('r2g');
  const redis = () => instances.redis();

  async function instance(options: Parameters<DelayInstances['start']>[1] = {}): Promise<DelayTestApp> {
    return (await instances.start(1, options))[0];
  }

  it(
    'a consumer started without groupConcurrency runs one job of a group at a time (the default 1), ' +
      'after an earlier deployment used 3',
    async () => {
      const keyPrefix = uniquePrefix('r2gc');
      const topic = 'r2.gc-default';
      // Yesterday's deployment: groupConcurrency 3.
      const old = await instance({ keyPrefix });
      const oldConsumer = old.queue.consume(topic, async () => undefined, { groupConcurrency: 3 });
      await oldConsumer.close();
      await old.close();
      // Today's deployment removed the option: the documented default is 1.
      const today = await instance({ keyPrefix });
      let inside = 0;
      let most = 0;
      const done: string[] = [];
      today.queue.consume<string>(
        topic,
        async (payload) => {
          inside++;
          most = Math.max(most, inside);
          await new Promise((resolve) => setTimeout(resolve, 300));
          inside--;
          done.push(payload);
        },
        { concurrency: 8 },
      );
      await today.queue.scheduleMany(
        topic,
        ['a', 'b', 'c'].map((p) => ({ payload: p, group: 'g' })),
      );
      await waitFor(() => done.length === 3, 10_000, 'the three jobs');
      expect({ most, limitKey: await redis().get(`${keyPrefix}:dq:{${topic}}:group-limit`) }).toEqual({ most: 1, limitKey: null });
    },
  );

  it(
    'cancel of a running group job whose notice was lost: the next job of the group starts soon after ' +
      'the handler returned, not at the claim deadline',
    async () => {
      const keyPrefix = uniquePrefix('r2gl');
      const topic = 'r2.lost-notice';
      const a = await instance({ keyPrefix });
      const c = await instance({ keyPrefix });
      const returnedAt = new Map<string, number>();
      const startedAt = new Map<string, number>();
      const outcomes: string[] = [];
      const events = a.app.get(RedisLockEvents);
      for (const name of ['job.cancelled', 'job.succeeded', 'job.failed'] as const) {
        events.on(name, (event: { topic: string; id: string }) => {
          if (event.topic === topic) outcomes.push(`${event.id}:${name}`);
        });
      }
      const cancelled = deferred();
      a.queue.consume<string>(
        topic,
        async (payload, job: JobContext) => {
          startedAt.set(payload, Date.now());
          if (payload === 'A') await cancelled.promise; // returns right after the cancel (a short step)
          returnedAt.set(payload, Date.now());
        },
        // Extensions every 10 s: the lost notice is not learnt within the test's window.
        { concurrency: 4, visibilityTimeout: 30_000 },
      );
      await waitFor(
        async () => (await redis().pubsub('NUMSUB', new RedisKeySpace(keyPrefix).topic(topic).cancelChannel))[1] === 1,
        5_000,
        'the subscription',
      );
      a.app.get(CancelListener).close(); // the notice is lost (subscriber reconnecting)
      await c.queue.scheduleMany(topic, [
        { payload: 'A', id: 'A', group: 'g' },
        { payload: 'B', id: 'B', group: 'g' },
      ]);
      await waitFor(() => startedAt.has('A'), 5_000, 'A to start');
      expect(await c.queue.cancel(topic, 'A')).toBe(true);
      cancelled.resolve();
      await waitFor(() => returnedAt.has('A'), 5_000, 'A to return');
      // The handler has returned: its acknowledgement, which finds the job gone, gives the turn back
      // (the claim's deadline is ~30 s away).
      const bStarted = await waitFor(() => startedAt.get('B'), 5_000, 'B to start after A returned').catch((error: Error) => error.message);
      const held = await redis().zrange(`${keyPrefix}:dq:{${topic}}:groups-held`, '0', '-1');
      // A finished before it learnt of the cancel: reported by its own outcome (docs: Cancelling a running job).
      const ofA = outcomes.filter((outcome) => outcome.startsWith('A:'));
      expect({ bStarted: typeof bStarted === 'number', held, ofA }).toEqual({ bStarted: true, held: [], ofA: ['A:job.succeeded'] });
    },
  );
});
