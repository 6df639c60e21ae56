import { deferred, waitFor } from '../support/timing.js';
import { useDelayInstances } from './support/delay-instances.js';

/**
 * Every job of a group waits in its group's queue (`waiting-group`, `grouped`) until claimed, its
 * group's next one included; `stats().readyGroups` counts the groups whose turn has come with a job
 * due now, so `due + readyGroups` is what consumers could start now (docs/delayed-jobs.md, Groups).
 */
describe('stats().readyGroups', () => {
  const instances = useDelayInstances('ready-groups');

  it('counts the groups whose next job could start now: not those due later, nor those waiting on a running job', async () => {
    const [t] = await instances.start(1);
    const topic = 'ready-groups';
    for (const group of ['order:1', 'order:2', 'order:3']) {
      await t.queue.schedule(topic, { group, step: 1 }, { group });
      await t.queue.schedule(topic, { group, step: 2 }, { group });
    }
    await t.queue.schedule(topic, { group: 'order:4', step: 1 }, { group: 'order:4', delay: 600_000 });
    await t.queue.schedule(topic, { plain: true });
    expect(await t.queue.stats(topic)).toMatchObject({ due: 1, scheduled: 0, grouped: 7, readyGroups: 3, busyGroups: 0 });

    const release = deferred();
    const running: string[] = [];
    t.queue.consume<{ group?: string }>(
      topic,
      async (payload) => {
        running.push(payload.group ?? 'plain');
        if (payload.group === 'order:1') await release.promise;
      },
      { concurrency: 1 },
    );
    // order:1's first job runs and holds its group; the others wait behind the one consumer slot.
    await waitFor(() => running.includes('order:1'), 10_000, 'order:1 to start');
    // Each of the three groups due now is busy (order:1's job runs; a job the consumer claimed ahead holds
    // its group too) or ready, never both nor neither.
    const held = await t.queue.stats(topic);
    expect(held.busyGroups).toBeGreaterThanOrEqual(1);
    expect(held.busyGroups + held.readyGroups).toBe(3);
    release.resolve();
    await waitFor(() => running.length === 7, 10_000, 'every job due now to run');
    // The last run's acknowledgement frees its group after the handler returns: wait for it, then the
    // only grouped job left is order:4's, due later, so no group is ready or busy.
    await waitFor(async () => (await t.queue.stats(topic)).busyGroups === 0, 10_000, 'the last group to be freed');
    expect(await t.queue.stats(topic)).toMatchObject({ due: 0, grouped: 1, readyGroups: 0, busyGroups: 0 });
  });
});
