import { JobCancelledError, TopicHasRunningJobsError } from '../../lib/index.js';
import { rejectionOf } from '../support/thrown.js';
import { useDelayInstances } from './support/delay-instances.js';
import { deferred, waitFor } from '../support/timing.js';
import { topicStats } from '../support/topic-stats.js';

describe('DelayQueueService.obliterate', () => {
  const instances = useDelayInstances('jobl');

  /** Every key of the topic's family (one shard or its shards), sorted. */
  const keysOf = async (prefix: string, topic: string) => (await instances.redis().keys(`${prefix}:dq:{${topic}*`)).sort();

  it('removes every key of a topic in every state, schedules included, and leaves other topics alone', async () => {
    const [a, b] = await instances.start(2, { delayQueue: { retention: { deadLetterMaxCount: 10 } } });
    b.queue.consume<string>(
      'o.all',
      (payload) => {
        if (payload === 'dies') throw new Error('no');
        return payload;
      },
      { maxAttempts: 1, keepCompleted: { count: 10 }, groupConcurrency: 2, rateLimit: { max: 100, duration: 1000 } },
    );
    await a.queue.scheduleMany('o.all', [
      { payload: 'dies', id: 'dies' },
      { payload: 'kept', id: 'kept', group: 'g' },
    ]);
    await waitFor(
      async () => (await a.queue.stats('o.all')).dead === 1 && (await a.queue.stats('o.all')).completed === 1,
      5_000,
      'finished',
    );
    await a.queue.repeat('o.all', { every: 3_600_000 }, { id: 'hourly' });
    await a.queue.schedule('o.all', 'later', { delay: 3_600_000, group: 'g2' });
    await a.queue.schedule('o.other', 'stays', { delay: 3_600_000 });
    expect((await keysOf(a.keyPrefix, 'o.all')).length).toBeGreaterThan(8);

    // Two instances watch the schedule: neither may store it again after it is gone.
    await b.queue.repeat('o.all', { every: 3_600_000 }, { id: 'hourly' });
    const laterId = (await a.queue.list('o.all', { state: 'waiting-group' })).jobs[0].id;
    const waited = rejectionOf(() => b.queue.waitFor('o.all', laterId));
    await waitFor(async () => (await instances.redis().hexists(`${a.keyPrefix}:dq:{o.all}:waited`, laterId)) === 1, 10_000, 'the waiter');
    const result = await a.queue.obliterate('o.all');
    expect(await waited).toBeInstanceOf(JobCancelledError);
    expect(result).toMatchObject({ schedules: 1 });
    expect(result.jobs).toBeGreaterThanOrEqual(4);
    expect(await keysOf(a.keyPrefix, 'o.all')).toEqual([`${a.keyPrefix}:dq:{o.all}:repeat-removed`]);
    expect(await a.queue.stats('o.all')).toEqual(topicStats());
    expect(await a.queue.listRepeats('o.all')).toEqual([]);
    expect((await a.queue.get('o.other', (await a.queue.list('o.other', { state: 'scheduled' })).jobs[0].id))?.payload).toBe('stays');
    // The topic works again at once.
    await a.queue.schedule('o.all', 'again', { id: 'again' });
    await waitFor(async () => (await a.queue.get('o.all', 'again'))?.state === 'completed', 5_000, 'the new job to run');
  });

  it('refuses while a job runs, removing nothing, resuming the topic; forced, the handlers reporting later write nothing', async () => {
    const [a, b] = await instances.start(2);
    const hold = deferred();
    const done: string[] = [];
    const aborted: string[] = [];
    const consumer = b.queue.consume<string>(
      'o.busy',
      async (payload, job) => {
        await job.progress({ half: true });
        job.signal.addEventListener('abort', () => aborted.push(`${payload}:${(job.signal.reason as Error).name}`));
        await hold.promise;
        await job.progress({ done: true }).catch(() => undefined);
        done.push(payload);
        if (payload === 'fails') throw new Error('after obliterate');
        return 'result';
      },
      // Extensions every second: one of them finds the claim gone while the handlers wait.
      { keepCompleted: { count: 10 }, visibilityTimeout: 3_000, concurrency: 2, maxAttempts: 3 },
    );
    await a.queue.schedule('o.busy', 'succeeds', { id: 'succeeds', group: 'g' });
    await a.queue.schedule('o.busy', 'fails', { id: 'fails' });
    await waitFor(async () => (await a.queue.stats('o.busy')).active === 2, 5_000, 'both jobs to run');
    await a.queue.schedule('o.busy', 'waiting', { id: 'waiting', delay: 3_600_000 });

    await expect(a.queue.obliterate('o.busy')).rejects.toThrow(TopicHasRunningJobsError);
    await expect(a.queue.obliterate('o.busy')).rejects.toMatchObject({ code: 'TOPIC_HAS_RUNNING_JOBS', running: 2 });
    expect(await a.queue.stats('o.busy')).toEqual(topicStats({ scheduled: 1, active: 2, busyGroups: 1 }));

    expect(await a.queue.obliterate('o.busy', { force: true })).toMatchObject({ jobs: 3, schedules: 0 });
    expect(await keysOf(a.keyPrefix, 'o.busy')).toEqual([]);
    // The next visibility extension finds each claim gone (and writes nothing): the handlers are told.
    await waitFor(() => aborted.length === 2, 10_000, 'both signals to abort');
    expect(aborted.sort()).toEqual(['fails:JobVisibilityLostError', 'succeeds:JobVisibilityLostError']);
    expect(await keysOf(a.keyPrefix, 'o.busy')).toEqual([]);
    hold.resolve();
    await waitFor(() => done.length === 2, 5_000, 'the handlers to return');
    // The consumer's reports (acknowledgement, failure, progress) reach Redis by the time it closes;
    // closing, it posts the topic's wake-up marker for its peers (no job state).
    await consumer.close();
    expect((await keysOf(a.keyPrefix, 'o.busy')).filter((key) => !key.endsWith(':marker'))).toEqual([]);
    expect(await a.queue.stats('o.busy')).toEqual(topicStats());
    await expect(a.queue.obliterate('o.busy', { force: 'yes' } as never)).rejects.toThrow(/obliterate\.force/);
  });
});
