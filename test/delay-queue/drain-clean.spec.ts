import { InvalidOptionsError, JobCancelledError } from '../../lib/index.js';
import { rejectionOf } from '../support/thrown.js';
import { useDelayInstances } from './support/delay-instances.js';
import { deferred, waitFor } from '../support/timing.js';
import { topicStats } from '../support/topic-stats.js';

describe('DelayQueueService.drain and clean', () => {
  const instances = useDelayInstances('jdrain');

  it('drain removes every waiting job (scheduled, due, retry, waiting for its group), keeps the running one and its group', async () => {
    const [a, b] = await instances.start(2);
    const hold = deferred();
    const runs: string[] = [];
    b.queue.consume<string>(
      'd.mixed',
      async (payload) => {
        runs.push(payload);
        if (payload === 'blocker') await hold.promise;
        if (payload === 'fails') throw new Error('later');
      },
      { backoff: { delay: 3_600_000, jitter: 0 }, maxAttempts: 3, concurrency: 4 },
    );
    await a.queue.schedule('d.mixed', 'blocker', { id: 'blocker', group: 'g' });
    await a.queue.schedule('d.mixed', 'fails', { id: 'fails', group: 'r' });
    await waitFor(() => runs.includes('blocker') && runs.includes('fails'), 5_000, 'blocker and fails to start');
    await waitFor(async () => (await a.queue.get('d.mixed', 'fails'))?.state === 'scheduled', 5_000, 'the retry to wait');
    await a.queue.scheduleMany('d.mixed', [
      { payload: 'g-1', id: 'g-1', group: 'g' },
      { payload: 'r-1', id: 'r-1', group: 'r' },
      { payload: 'later', id: 'later', delay: 3_600_000 },
    ]);
    await a.queue.pause('d.mixed');
    await a.queue.schedule('d.mixed', 'now', { id: 'now' });
    expect(await a.queue.stats('d.mixed')).toEqual(
      topicStats({ scheduled: 2, due: 1, active: 1, grouped: 2, busyGroups: 2, paused: true }),
    );

    expect(await b.queue.drain('d.mixed')).toBe(5);
    expect(await a.queue.stats('d.mixed')).toEqual(topicStats({ active: 1, busyGroups: 1, paused: true }));
    for (const id of ['fails', 'g-1', 'r-1', 'later', 'now']) expect(await a.queue.get('d.mixed', id)).toBeNull();
    expect((await a.queue.get('d.mixed', 'blocker'))?.state).toBe('active');
    expect(await a.queue.drain('d.mixed')).toBe(0);

    // The groups go on: the running job finishes, then new jobs of both groups run.
    await a.queue.resume('d.mixed');
    hold.resolve();
    await a.queue.scheduleMany('d.mixed', [
      { payload: 'g-2', group: 'g' },
      { payload: 'r-2', group: 'r' },
    ]);
    await waitFor(() => runs.includes('g-2') && runs.includes('r-2'), 5_000, 'the groups to go on');
    await waitFor(async () => (await a.queue.stats('d.mixed')).busyGroups === 0, 5_000, 'the groups to be idle');
    expect(runs.filter((r) => ['g-1', 'r-1', 'later', 'now'].includes(r))).toEqual([]);
  });

  it.each([1, 3])('drains %i shard(s) of 2,500 jobs in batches, each batch its own call', async (shards) => {
    const topic = `d.many${shards}`;
    const [a] = await instances.start(1, shards > 1 ? { delayQueue: { topics: { [topic]: { shards } } } } : {});
    for (let i = 0; i < 5; i++) {
      await a.queue.scheduleMany(
        topic,
        Array.from({ length: 500 }, (_, k) => ({ payload: k, delay: 60_000, ...(k % 5 === 0 ? { group: `grp${k % 7}` } : {}) })),
      );
    }
    expect(await a.queue.drain(topic)).toBe(2500);
    expect(await a.queue.stats(topic)).toEqual(topicStats());
    expect(await a.queue.list(topic, { state: 'waiting-group' })).toEqual({ jobs: [] });
  });

  it('drain tells a waitFor() of a drained job, on another instance, that it was cancelled', async () => {
    const [a, b] = await instances.start(2);
    const id = await a.queue.schedule('d.waited', 'x', { delay: 60_000, group: 'g' });
    const waited = rejectionOf(() => a.queue.waitFor('d.waited', id));
    await waitFor(async () => (await instances.redis().hexists(`${a.keyPrefix}:dq:{d.waited}:waited`, id)) === 1, 10_000, 'the waiter');
    expect(await b.queue.drain('d.waited')).toBe(1);
    const error = await waited;
    expect(error).toBeInstanceOf(JobCancelledError);
    expect(error).toMatchObject({ jobId: id, whileWaited: true });
  });

  it('drains prioritized due jobs too: the claim afterwards takes only jobs scheduled after the drain', async () => {
    const [a] = await instances.start(1);
    await a.queue.scheduleMany(
      'd.prio',
      Array.from({ length: 30 }, (_, i) => ({ payload: `old-${i}`, priority: i % 4 })),
    );
    expect(await a.queue.drain('d.prio')).toBe(30);
    expect(await instances.redis().zcard(`${a.keyPrefix}:dq:{d.prio}:prioritized`)).toBe(0);
    await a.queue.schedule('d.prio', 'new', { priority: 2 });
    const runs: string[] = [];
    a.queue.consume<string>('d.prio', (payload) => void runs.push(payload));
    await waitFor(() => runs.length === 1, 5_000, 'the new job to run');
    await waitFor(async () => (await a.queue.stats('d.prio')).active === 0, 5_000, 'the job to finish');
    expect(runs).toEqual(['new']);
    expect(await instances.redis().zcard(`${a.keyPrefix}:dq:{d.prio}:prioritized`)).toBe(0);
  });

  it('clean removes the oldest dead letters by count and age, and kept completed jobs with their results', async () => {
    const [a] = await instances.start(1, { delayQueue: { retention: { deadLetterMaxCount: 100 } } });
    a.queue.consume<number>(
      'd.clean',
      (n) => {
        if (n < 30) throw new Error('dies');
        return n;
      },
      { maxAttempts: 1, keepCompleted: { count: 100 } },
    );
    for (let n = 0; n < 30; n++) await a.queue.schedule('d.clean', n, { id: `dead-${n}` });
    await waitFor(async () => (await a.queue.stats('d.clean')).dead === 30, 10_000, 'the dead letters');
    await a.queue.scheduleMany(
      'd.clean',
      Array.from({ length: 20 }, (_, k) => ({ payload: 30 + k, id: `done-${k}` })),
    );
    await waitFor(async () => (await a.queue.stats('d.clean')).completed === 20, 10_000, 'the completed jobs');

    expect(await a.queue.clean('d.clean', { state: 'dead', olderThan: 3_600_000 })).toBe(0);
    const oldest = (await a.queue.deadLetters('d.clean', { limit: 100 })).slice(-10).map((job) => job.id);
    expect(await a.queue.clean('d.clean', { state: 'dead', limit: 10 })).toBe(10);
    const left = (await a.queue.deadLetters('d.clean', { limit: 100 })).map((job) => job.id);
    expect(left).toHaveLength(20);
    expect(left.filter((id) => oldest.includes(id))).toEqual([]);
    for (const id of oldest) expect(await a.queue.get('d.clean', id)).toBeNull();
    expect(await a.queue.clean('d.clean', { state: 'dead' })).toBe(20);
    expect((await a.queue.get('d.clean', 'done-3'))?.result).toBe(33);
    expect(await a.queue.clean('d.clean', { state: 'completed' })).toBe(20);
    expect(await a.queue.get('d.clean', 'done-3')).toBeNull();
    expect(await a.queue.stats('d.clean')).toEqual(topicStats());
    expect(await instances.redis().keys(`*{d.clean}:results`)).toEqual([]);
  });

  it('refuses bad clean options with a typed error naming the option, removing nothing', async () => {
    const [a] = await instances.start(1);
    const cases: Array<[unknown, RegExp]> = [
      [{ state: 'due' }, /clean\.state/],
      [{ state: 'dead', olderThan: -1 }, /clean\.olderThan/],
      [{ state: 'dead', olderThan: 1.5 }, /clean\.olderThan/],
      [{ state: 'dead', limit: 0 }, /clean\.limit/],
      [{ state: 'dead', grace: 1 }, /grace/],
      [undefined, /clean/],
    ];
    for (const [options, message] of cases) {
      await expect(a.queue.clean('d.bad', options as never)).rejects.toThrow(InvalidOptionsError);
      await expect(a.queue.clean('d.bad', options as never)).rejects.toThrow(message);
    }
    await expect(a.queue.drain('bad topic')).rejects.toThrow(/topic/i);
  });
});
