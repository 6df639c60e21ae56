import { JobCommands } from '../../lib/delay-queue/job-commands.js';
import { useDelayInstances } from './support/delay-instances.js';

/**
 * Removing a waiting throttled job otherwise than by cancel() (drain(), the dashboard's cancel of a
 * waiting job) frees its dedupe key as cancel() does: the next throttle call schedules a job instead
 * of answering 'existing' with an id that no longer exists.
 */
describe('drain and throttle keys', () => {
  const instances = useDelayInstances('rev-drain-throttle');

  it('a throttle call after drain() schedules a job that exists (as after cancel)', async () => {
    const [t] = await instances.start(1);
    const dedupe = { key: 'product:7', ttl: 600_000 };
    const first = await t.queue.scheduleWithResult('reindex', 1, { delay: 60_000, dedupe });
    expect(first.status).toBe('created');
    expect(await t.queue.drain('reindex')).toBe(1);

    const next = await t.queue.scheduleWithResult('reindex', 2, { delay: 60_000, dedupe });
    // Observed: { id: first.id, status: 'existing' }, get(first.id) === null, nothing scheduled for 10 minutes.
    expect(await t.queue.get('reindex', next.id)).not.toBeNull();
    expect((await t.queue.stats('reindex')).scheduled).toBe(1);
  });

  it('the same sequence with cancel() instead of drain() holds (control)', async () => {
    const [t] = await instances.start(1);
    const dedupe = { key: 'product:7', ttl: 600_000 };
    const first = await t.queue.scheduleWithResult('reindex2', 1, { delay: 60_000, dedupe });
    expect(await t.queue.cancel('reindex2', first.id)).toBe(true);
    const next = await t.queue.scheduleWithResult('reindex2', 2, { delay: 60_000, dedupe });
    expect(next.status).toBe('created');
    expect((await t.queue.stats('reindex2')).scheduled).toBe(1);
  });

  it("the dashboard's cancel of a waiting throttled job frees its key too (cancel-waiting-job has no releaseDedupe)", async () => {
    const [t] = await instances.start(1);
    const dedupe = { key: 'product:7', ttl: 600_000 };
    const first = await t.queue.scheduleWithResult('reindex3', 1, { delay: 60_000, dedupe });
    // The dashboard's "cancel" action (POST api/topics/:topic/jobs/:id/cancel) calls this.
    expect(await t.app.get(JobCommands).cancelWaiting('reindex3', first.id)).toBe('cancelled');
    const next = await t.queue.scheduleWithResult('reindex3', 2, { delay: 60_000, dedupe });
    expect(next.status).toBe('created');
    expect((await t.queue.stats('reindex3')).scheduled).toBe(1);
  });
});
