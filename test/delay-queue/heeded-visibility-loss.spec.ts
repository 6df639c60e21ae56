import { JobVisibilityLostError, type JobContext } from '../../lib/index.js';
import { waitFor } from '../support/timing.js';
import { useFaultProxy } from '../support/use-fault-proxy.js';
import { useDelayInstances } from './support/delay-instances.js';

const VISIBILITY_MS = 10_000;

/**
 * At least once, for a handler that heeds its signal: when the consumer counts a claim lost (no
 * extension confirmed in time: the link stalled) the handler's signal aborts with
 * JobVisibilityLostError and a well-behaved handler stops and returns. Its return is no proof the
 * work was done, so the job must run again, even when the stall heals before Redis's own deadline
 * and the held extension keeps the claim there (an acknowledgement would then complete a job whose
 * work was never done).
 */
describe('a handler that returns when told its visibility was lost', () => {
  const instances = useDelayInstances('hvl');
  const link = useFaultProxy();

  it('has its job run again, not acknowledged', async () => {
    const [app] = await instances.start(1, { redis: link.url });
    const runs: Array<{ attempt: number; stoppedBy?: string }> = [];
    app.queue.consume(
      'heeds.signal',
      async (_payload: unknown, job: JobContext) => {
        const run: { attempt: number; stoppedBy?: string } = { attempt: job.attempt };
        runs.push(run);
        if (job.attempt > 1) return;
        // The link stalls as the work starts: no extension is confirmed from now on.
        link.blackhole();
        await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve(), { once: true }));
        run.stoppedBy = (job.signal.reason as Error).name;
        // The stall heals before Redis's deadline: the held extension reaches Redis and keeps the claim.
        link.heal();
      },
      { visibilityTimeout: VISIBILITY_MS },
    );
    await app.queue.schedule('heeds.signal', { work: 'undone' }, { id: 'heeded' });
    await waitFor(() => runs.length >= 2 || undefined, 3 * VISIBILITY_MS, 'the job to run again after its first delivery stopped');
    expect(runs[0]).toEqual({ attempt: 1, stoppedBy: JobVisibilityLostError.name });
    expect(runs[1]).toEqual({ attempt: 2 });
  }, 60_000);
});
