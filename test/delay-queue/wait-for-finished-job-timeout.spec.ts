import { JobDeadError, JobNotFoundError, JobWaitTimeoutError, UnrecoverableJobError } from '../../lib/index.js';
import { JobWaiters } from '../../lib/delay-queue/job-waiters.js';
import { rejectionOf } from '../support/thrown.js';
import { waitFor } from '../support/timing.js';
import { useDelayInstances } from './support/delay-instances.js';

/**
 * `waitFor(topic, id, { timeout })` of a job already finished answers from its stored state whatever
 * the timeout, 0 included (a status check): the timeout never ends a wait before its first read of
 * the job. Each waiting application is new, so its first wait also opens its subscriber connection.
 */
describe('waitFor with a short timeout on a finished job', () => {
  const instances = useDelayInstances('wait-short');

  it('answers a kept completed job with its result, whatever the timeout', async () => {
    const [worker, waiter] = await instances.start(2);
    const consumer = worker.queue.consume('short.kept', () => 'the result', { keepCompleted: { count: 10 } });
    const id = await worker.queue.schedule('short.kept', 1);
    await waitFor(async () => (await worker.queue.get('short.kept', id))?.state === 'completed', 10_000, 'the job to complete');
    await consumer.close();
    // The waiting application's first wait (its subscriber connection opens now), then later ones.
    for (const timeout of [0, 1, 20, 0]) expect(await waiter.queue.waitFor('short.kept', id, { timeout })).toBe('the result');
    expect(waiter.app.get(JobWaiters).pending).toBe(0);
  });

  it('rejects a dead job with JobDeadError and an unknown id with JobNotFoundError, with timeout 0', async () => {
    const [worker, waiter] = await instances.start(2);
    const consumer = worker.queue.consume('short.dead', () => {
      throw new UnrecoverableJobError('gone');
    });
    const id = await worker.queue.schedule('short.dead', 1);
    await waitFor(async () => (await worker.queue.get('short.dead', id))?.state === 'dead', 10_000, 'the job to die');
    await consumer.close();
    expect(await rejectionOf(() => waiter.queue.waitFor('short.dead', id, { timeout: 0 }))).toBeInstanceOf(JobDeadError);
    expect(await rejectionOf(() => waiter.queue.waitFor('short.dead', 'never-scheduled', { timeout: 0 }))).toBeInstanceOf(JobNotFoundError);
  });

  it('rejects a job not finished with JobWaitTimeoutError once read, with timeout 0, leaving it as it was', async () => {
    const [app] = await instances.start(1);
    const id = await app.queue.schedule('short.later', { n: 1 }, { delay: 60_000 });
    const error = await rejectionOf(() => app.queue.waitFor('short.later', id, { timeout: 0 }));
    expect(error).toBeInstanceOf(JobWaitTimeoutError);
    expect(error).toMatchObject({ code: 'JOB_WAIT_TIMEOUT', topic: 'short.later', jobId: id, timeout: 0 });
    expect(await app.queue.get('short.later', id)).toMatchObject({ state: 'scheduled', payload: { n: 1 } });
    expect(app.app.get(JobWaiters).pending).toBe(0);
  });
});
