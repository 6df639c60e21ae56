import { InvalidJobError, type DelayQueueService } from '../../lib/index.js';
import { useDelayInstances } from './support/delay-instances.js';
import { deferred, waitFor } from '../support/timing.js';

describe('DelayQueueService.updatePayload', () => {
  const instances = useDelayInstances('jupd');

  it('gives a waiting job (scheduled, due, waiting for its group) the new payload for its run, its header kept', async () => {
    const [a, b] = await instances.start(2);
    const hold = deferred();
    const runs: Array<{ id: string; payload: unknown; attempt: number }> = [];
    await a.queue.schedule('u.wait', 'blocker', { id: 'blocker', group: 'g' });
    await a.queue.schedule('u.wait', { v: 1 }, { id: 'grouped', group: 'g', maxAttempts: 4 });
    await a.queue.schedule('u.wait', { v: 1 }, { id: 'later', delay: 3_600_000 });
    const before = await a.queue.get('u.wait', 'later');
    expect(await b.queue.updatePayload('u.wait', 'later', { v: 2, text: 'é€😀' })).toBe(true);
    expect(await a.queue.get('u.wait', 'later')).toEqual({ ...before, payload: { v: 2, text: 'é€😀' } });
    b.queue.consume('u.wait', async (payload, job) => {
      runs.push({ id: job.id, payload, attempt: job.attempt });
      if (payload === 'blocker') await hold.promise;
    });
    await waitFor(() => runs.length === 1, 5_000, 'the blocker to start');
    expect((await a.queue.get('u.wait', 'grouped'))?.state).toBe('waiting-group');
    expect(await a.queue.updatePayload('u.wait', 'grouped', { v: 3 })).toBe(true);
    expect(await a.queue.get('u.wait', 'grouped')).toMatchObject({ state: 'waiting-group', group: 'g', maxAttempts: 4, payload: { v: 3 } });
    // A running job is left alone.
    expect(await a.queue.updatePayload('u.wait', 'blocker', 'changed')).toBe(false);
    hold.resolve();
    await waitFor(() => runs.length === 2, 5_000, 'the grouped job to run');
    expect(runs).toEqual([
      { id: 'blocker', payload: 'blocker', attempt: 1 },
      { id: 'grouped', payload: { v: 3 }, attempt: 1 },
    ]);
    expect(await a.queue.reschedule('u.wait', 'later', { delay: 0 })).toBe(true);
    await waitFor(() => runs.length === 3, 5_000, 'the later job to run');
    expect(runs[2]).toEqual({ id: 'later', payload: { v: 2, text: 'é€😀' }, attempt: 1 });
  });

  it('updates a job waiting for its retry (its attempts kept); refuses dead, completed and unknown jobs', async () => {
    const [a] = await instances.start(1, { delayQueue: { retention: { deadLetterMaxCount: 10 } } });
    const seen: Array<{ payload: unknown; attempt: number }> = [];
    a.queue.consume(
      'u.retry',
      (payload, job) => {
        seen.push({ payload, attempt: job.attempt });
        if (payload === 'first' || payload === 'dies') throw new Error('again');
        return 'ok';
      },
      { backoff: { delay: 60_000, jitter: 0 }, maxAttempts: 3, keepCompleted: { count: 5 } },
    );
    await a.queue.schedule('u.retry', 'first', { id: 'retried' });
    await waitFor(async () => (await a.queue.get('u.retry', 'retried'))?.attempts === 1 && seen.length === 1, 5_000, 'the first failure');
    await waitFor(async () => (await a.queue.get('u.retry', 'retried'))?.state === 'scheduled', 5_000, 'the retry to wait');
    expect(await a.queue.updatePayload('u.retry', 'retried', 'second')).toBe(true);
    expect(await a.queue.get('u.retry', 'retried')).toMatchObject({ attempts: 1, lastError: 'Error: again', payload: 'second' });
    await a.queue.reschedule('u.retry', 'retried', { delay: 0 });
    await waitFor(async () => (await a.queue.get('u.retry', 'retried'))?.state === 'completed', 5_000, 'the retry to complete');
    expect(seen[1]).toEqual({ payload: 'second', attempt: 2 });
    expect(await a.queue.updatePayload('u.retry', 'retried', 'third')).toBe(false);
    expect((await a.queue.get('u.retry', 'retried'))?.payload).toBe('second');

    await a.queue.schedule('u.retry', 'dies', { id: 'dead', maxAttempts: 1 });
    await waitFor(async () => (await a.queue.get('u.retry', 'dead'))?.state === 'dead', 5_000, 'the job to die');
    expect(await a.queue.updatePayload('u.retry', 'dead', 'revived')).toBe(false);
    expect((await a.queue.get('u.retry', 'dead'))?.payload).toBe('dies');
    expect(await a.queue.updatePayload('u.retry', 'nobody', 'x')).toBe(false);
    expect(await a.queue.get('u.retry', 'nobody')).toBeNull();
  });

  it('refuses a payload schedule() would refuse, before writing anything', async () => {
    const [a] = await instances.start(1, { delayQueue: { maxPayloadBytes: 1024 } });
    const queue: DelayQueueService = a.queue;
    await queue.schedule('u.bad', { ok: true }, { id: 'kept', delay: 60_000 });
    for (const bad of [{ n: 1n }, { d: new Date() }, 'x'.repeat(2000), undefined]) {
      await expect(queue.updatePayload('u.bad', 'kept', bad)).rejects.toThrow(InvalidJobError);
    }
    await expect(queue.updatePayload('u.bad', '', 1)).rejects.toThrow(/id/);
    await expect(queue.updatePayload('bad topic', 'kept', 1)).rejects.toThrow();
    expect((await queue.get('u.bad', 'kept'))?.payload).toEqual({ ok: true });
  });
});
