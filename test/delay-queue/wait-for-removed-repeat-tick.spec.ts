import { JobCancelledError } from '../../lib/index.js';
import { useDelayInstances } from './support/delay-instances.js';
import { outcomeWithin, waitFor } from '../support/timing.js';
import { rejectionOf } from '../support/thrown.js';

/**
 * removeRepeat() deletes the schedule's waiting tick job: a waitFor() of that tick hears it was
 * cancelled (JobCancelledError), as after cancel() or drain(), instead of waiting until its timeout.
 */
describe('waitFor of a repeat tick whose schedule is removed', () => {
  const instances = useDelayInstances('rev-wait-tick');

  it('rejects with JobCancelledError', async () => {
    const [a, b] = await instances.start(2);
    await a.queue.repeat('digest', { every: 3_600_000 }, { id: 'hourly' });
    await waitFor(async () => (await a.queue.list('digest', { state: 'scheduled' })).jobs.length === 1, 5_000, 'the tick');
    const [tick] = (await a.queue.list('digest', { state: 'scheduled' })).jobs;
    const waited = rejectionOf(() => b.queue.waitFor('digest', tick.id));
    await waitFor(async () => (await instances.redis().hexists(`${a.keyPrefix}:dq:{digest}:waited`, tick.id)) === 1, 10_000, 'the waiter');
    expect(await a.queue.removeRepeat('digest', 'hourly')).toBe(true);
    expect(await a.queue.get('digest', tick.id)).toBeNull();
    // Observed: 'pending' (the wait would last until shutdown).
    expect(await outcomeWithin(waited, 5_000)).toBeInstanceOf(JobCancelledError);
  });
});
