import type { DelayQueueService } from '../../lib/index.js';
import { useDelayInstances } from './support/delay-instances.js';
import { deferred, waitFor, type Deferred } from '../support/timing.js';

/**
 * stats() of a topic that keeps completed jobs and uses groups. Docs: `grouped`:
 * jobs waiting for their group's turn; `completed` when the topic keeps completed jobs;
 * "`cancel(topic, id)` deletes the kept job, after which the id is free".
 */
describe('stats() with kept completed jobs and groups', () => {
  const instances = useDelayInstances('rvc');

  async function instance(): Promise<DelayQueueService> {
    return (await instances.start(1))[0].queue;
  }

  /** Consumes `topic` keeping its completed jobs; the job of payload 'blocker' runs until `hold` resolves. */
  function consumeWithBlocker(queue: DelayQueueService, topic: string): { hold: Deferred<void>; seen: string[] } {
    const hold = deferred();
    const seen: string[] = [];
    queue.consume<string>(
      topic,
      async (payload) => {
        seen.push(payload);
        if (payload === 'blocker') await hold.promise;
        return { done: payload };
      },
      { keepCompleted: { count: 100 } },
    );
    return { hold, seen };
  }

  it(
    'cancel() of a kept completed job takes its record away: stats() counts it neither as completed ' +
      'nor instead of a job waiting for its group',
    async () => {
      const queue = await instance();
      const { hold, seen } = consumeWithBlocker(queue, 'rv.kept');
      await queue.schedule('rv.kept', 'k', { id: 'k' });
      await waitFor(async () => (await queue.get('rv.kept', 'k'))?.state === 'completed', 5_000, 'k to be kept');
      expect(await queue.cancel('rv.kept', 'k')).toBe(true);
      expect(await queue.get('rv.kept', 'k')).toBeNull();

      // Two jobs of group g waiting behind a running one.
      await queue.schedule('rv.kept', 'blocker', { group: 'g' });
      await waitFor(() => seen.includes('blocker'), 5_000, 'the blocker to start');
      await queue.scheduleMany('rv.kept', [
        { payload: 'w1', group: 'g' },
        { payload: 'w2', group: 'g' },
      ]);
      const stats = await queue.stats('rv.kept');
      hold.resolve();
      expect({ completed: stats.completed ?? 0, grouped: stats.grouped, active: stats.active }).toEqual({
        completed: 0,
        grouped: 2,
        active: 1,
      });
    },
  );

  it('replace: true of a kept completed job takes its record away: the new job is counted once', async () => {
    const queue = await instance();
    const { hold, seen } = consumeWithBlocker(queue, 'rv.kept2');
    await queue.schedule('rv.kept2', 'k', { id: 'k', group: 'g' });
    await waitFor(async () => (await queue.get('rv.kept2', 'k'))?.state === 'completed', 5_000, 'k to be kept');
    await queue.schedule('rv.kept2', 'blocker', { group: 'g' });
    await waitFor(() => seen.includes('blocker'), 5_000, 'the blocker to start');
    // k again, in the same group: it waits for the blocker.
    await queue.schedule('rv.kept2', 'k-again', { id: 'k', group: 'g', replace: true });
    await queue.schedule('rv.kept2', 'w', { group: 'g' });
    expect(await queue.get('rv.kept2', 'k')).toMatchObject({ state: 'waiting-group', payload: 'k-again' });
    const stats = await queue.stats('rv.kept2');
    hold.resolve();
    expect({ completed: stats.completed ?? 0, grouped: stats.grouped }).toEqual({ completed: 0, grouped: 2 });
  });
});
