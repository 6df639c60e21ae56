import { JobRateLimitedError, type JobContext } from '../../lib/index.js';
import { deferred, waitFor, within } from '../support/timing.js';
import { useDelayInstances } from './support/delay-instances.js';

/**
 * A debounced job whose run threw JobRateLimitedError has its attempt given back: the next debounce
 * call replaces it under the same id (docs/delayed-jobs.md, Throttle and debounce), as it replaces
 * a job never started, and the earlier run's log lines go with it: the log of the job that runs
 * with the last payload holds only what that run wrote.
 */
describe('debounce after a run that threw JobRateLimitedError', () => {
  const instances = useDelayInstances('debounce-rate-limited');

  it('replaces the job, runs the last payload once, and drops the earlier run’s log', async () => {
    const [t] = await instances.start(1);
    const limited = deferred<void>();
    const runs: Array<{ payload: unknown; id: string; attempt: number }> = [];
    t.queue.consume(
      'notify',
      (payload, job: JobContext) => {
        runs.push({ payload, id: job.id, attempt: job.attempt });
        job.log(`run of ${String(payload)}`);
        if (runs.length === 1) {
          limited.resolve();
          // Long enough that the second call below lands within the block on a loaded machine.
          throw new JobRateLimitedError(3_000);
        }
      },
      { keepCompleted: { count: 10 } },
    );
    const dedupe = { key: 'chat:1', ttl: 10, mode: 'debounce' as const };
    const one = await t.queue.scheduleWithResult('notify', 'one', { dedupe });
    await within(limited.promise, 10_000, 'the rate-limited run');
    await waitFor(async () => (await t.queue.get('notify', one.id))?.state === 'due', 5_000, 'the job back in the queue');
    expect((await t.queue.get('notify', one.id))?.attempts).toBe(0);

    const two = await t.queue.scheduleWithResult('notify', 'two', { dedupe });
    expect(two).toEqual({ id: one.id, status: 'replaced' });
    await waitFor(async () => (await t.queue.get('notify', one.id))?.state === 'completed', 10_000, 'the last payload’s run');
    expect(runs.map((r) => r.payload)).toEqual(['one', 'two']);
    expect(runs[1]).toEqual({ payload: 'two', id: one.id, attempt: 1 });
    expect(await t.queue.logs('notify', one.id)).toEqual(['run of two']);
  });
});
