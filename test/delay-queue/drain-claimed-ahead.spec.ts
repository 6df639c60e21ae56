import { JobCancelledError } from '../../lib/index.js';
import { rejectionOf } from '../support/thrown.js';
import { deferred, waitFor, within } from '../support/timing.js';
import { useDelayInstances } from './support/delay-instances.js';

/**
 * `drain()` and jobs a consumer claimed ahead of its free slots (prefetch): they are claimed, so the
 * drain leaves them, but one handed back unstarted after the drain is removed then, as the drain
 * would have removed it (docs/delayed-jobs.md, Removing jobs): it never comes back to the queue.
 */
describe('drain() and jobs claimed ahead', () => {
  const instances = useDelayInstances('drain-claimed-ahead');

  it('removes a claimed-ahead job when its consumer hands it back unstarted, and runs nothing of what waited', async () => {
    const [t] = await instances.start(1);
    const topic = 'drain-claimed-ahead';
    const started: number[] = [];
    const release = deferred();
    t.queue.consume<number>(
      topic,
      async (n) => {
        started.push(n);
        if (n === 5) await release.promise; // a long job: jobs claimed behind it wait in the buffer
      },
      { concurrency: 1 },
    );
    const ids = await t.queue.scheduleMany(
      topic,
      Array.from({ length: 60 }, (_, n) => ({ payload: n })),
    );
    await waitFor(() => started.includes(5), 10_000, 'job 5 to run');
    // Short handlers ran before it: the consumer claims ahead of its one slot.
    await waitFor(async () => (await t.queue.stats(topic)).active > 1, 10_000, 'jobs claimed ahead of the running one');
    const claimedAhead = (await t.queue.list(topic, { state: 'active', limit: 100 })).jobs.map((job) => job.id);
    const watched = claimedAhead.find((id) => id !== ids[5])!;
    const waiter = rejectionOf(() => t.queue.waitFor(topic, watched));
    // The wait is in place (recorded beside the job) before the drain, so it hears the removal.
    const waited = `${t.keyPrefix}:dq:{${topic}}:waited`;
    await waitFor(async () => (await instances.redis().hexists(waited, watched)) === 1, 10_000, 'the wait in place');

    const startedBeforeDrain = [...started];
    await t.queue.drain(topic);
    // Each claimed-ahead job is handed back within 250 ms of its claim (the slot stays busy): removed then.
    await waitFor(async () => (await t.queue.stats(topic)).active === 1, 10_000, 'the claimed-ahead jobs handed back');
    expect(await within(waiter, 10_000, 'the waiter of a claimed-ahead job')).toBeInstanceOf(JobCancelledError);
    expect(await t.queue.stats(topic)).toMatchObject({ due: 0, scheduled: 0, active: 1 });

    release.resolve();
    await waitFor(async () => (await t.queue.stats(topic)).active === 0, 10_000, 'job 5 to finish');
    expect(started).toEqual(startedBeforeDrain);
  });
});
