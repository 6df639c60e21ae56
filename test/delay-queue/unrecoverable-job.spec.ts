import { RedisLockEvents, UnrecoverableJobError, type JobDeadEvent } from '../../lib/index.js';
import { useDelayInstances } from './support/delay-instances.js';
import { waitFor } from '../support/timing.js';

/** `throw new UnrecoverableJobError(message, { cause })`: no retry, straight to the dead letters, reason kept. */
describe('UnrecoverableJobError', () => {
  const apps = useDelayInstances('unrecoverable');

  it('sends the job to the dead letters after that attempt, whatever attempts are left, with its message and cause', async () => {
    const [a] = await apps.start(1, { delayQueue: { maxAttempts: 5, backoff: { delay: 0, jitter: 0 } } });
    const dead: JobDeadEvent[] = [];
    a.app.get(RedisLockEvents).on('job.dead', (event) => void dead.push(event));
    const runs: string[] = [];
    a.queue.consume<string>('unrec', (payload, job) => {
      runs.push(`${payload}@${job.attempt}`);
      if (payload === 'gone') throw new UnrecoverableJobError('order 42 is gone', { cause: new Error('404 from the orders API') });
      if (job.attempt === 1) throw new Error('flaky');
    });
    await a.queue.schedule('unrec', 'gone', { id: 'gone' });
    await a.queue.schedule('unrec', 'flaky', { id: 'flaky' });
    await waitFor(async () => (await a.queue.stats('unrec')).dead === 1 && runs.includes('flaky@2'), 10_000, 'both outcomes');

    // Any other error still retries.
    expect(runs.sort()).toEqual(['flaky@1', 'flaky@2', 'gone@1']);
    expect(dead).toEqual([
      { topic: 'unrec', id: 'gone', attempt: 1, maxAttempts: 5, error: 'UnrecoverableJobError: order 42 is gone', unrecoverable: true },
    ]);
    const [letter] = await a.queue.deadLetters('unrec');
    expect(letter).toMatchObject({ id: 'gone', state: 'dead', attempts: 1, lastError: 'UnrecoverableJobError: order 42 is gone' });
    expect(letter.lastErrorStack).toContain('UnrecoverableJobError: order 42 is gone');
    expect(letter.lastErrorStack).toContain('[cause]: Error: 404 from the orders API');

    // retryDead requeues it as any dead letter.
    expect(await a.queue.retryDead('unrec', 'gone')).toBe(1);
    await waitFor(() => runs.filter((r) => r.startsWith('gone')).length === 2, 10_000, 'the requeued run');
  });

  it('releases the group’s turn: the next job of the group runs at once', async () => {
    const [a] = await apps.start(1, { delayQueue: { maxAttempts: 3 } });
    const runs: string[] = [];
    a.queue.consume<string>('unrec.group', (payload) => {
      runs.push(payload);
      if (payload === 'first') throw new UnrecoverableJobError('cannot succeed');
    });
    await a.queue.scheduleMany('unrec.group', [
      { payload: 'first', group: 'g' },
      { payload: 'second', group: 'g' },
    ]);
    await waitFor(() => runs.length === 2, 10_000, 'the next job of the group');
    expect(runs).toEqual(['first', 'second']);
    await waitFor(async () => (await a.queue.stats('unrec.group')).active === 0, 5_000, 'the topic to settle');
    expect(await a.queue.stats('unrec.group')).toMatchObject({ dead: 1, due: 0, grouped: 0, busyGroups: 0 });
  });

  it('buries a repeat tick without stopping its schedule: the next tick runs', async () => {
    const [a] = await apps.start(1, { delayQueue: { maxAttempts: 3 } });
    const ticks: string[] = [];
    a.queue.consume('unrec.repeat', (_payload, job) => {
      ticks.push(job.id);
      if (ticks.length === 1) throw new UnrecoverableJobError('this tick cannot succeed');
    });
    await a.queue.repeat('unrec.repeat', { every: 200 }, { id: 'beat' });
    await waitFor(() => ticks.length >= 2, 10_000, 'the next tick');
    expect(ticks[1]).not.toBe(ticks[0]);
    expect((await a.queue.deadLetters('unrec.repeat')).map((job) => job.id)).toEqual([ticks[0]]);
    await a.queue.removeRepeat('unrec.repeat', 'beat');
  });
});
