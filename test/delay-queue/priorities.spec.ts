import { InvalidJobError, JobRateLimitedError, type DelayQueueService, type JobContext } from '../../lib/index.js';
import { useDelayInstances } from './support/delay-instances.js';
import { waitFor } from '../support/timing.js';

/** Runs every job of `topic` on `queue`, one at a time, and records the payloads in the order they started. */
function record(queue: DelayQueueService, topic: string, onRun?: (payload: string, job: JobContext) => void): string[] {
  const seen: string[] = [];
  queue.consume<string>(
    topic,
    (payload, job) => {
      seen.push(payload);
      onRun?.(payload, job);
    },
    { concurrency: 1 },
  );
  return seen;
}

describe('DelayQueueService: priorities', () => {
  const instances = useDelayInstances('prio');

  async function start(n: number, options: Parameters<ReturnType<typeof useDelayInstances>['start']>[1] = {}) {
    return (await instances.start(n, options)).map((t) => t.queue);
  }

  it('runs due jobs smaller priority first; one priority in due order, then in schedule order', async () => {
    const [queue] = await start(1);
    const past = Date.now() - 60_000;
    await queue.schedule('p.order', 'p5-a', { priority: 5 });
    await queue.schedule('p.order', 'p0-a');
    await queue.scheduleMany('p.order', [
      { payload: 'p5-b', priority: 5 },
      { payload: 'p1-a', priority: 1 },
      { payload: 'p0-b', priority: 0 },
      { payload: 'p2_097_152', priority: 2_097_152 },
      { payload: 'p1-b', priority: 1 },
    ]);
    await queue.scheduleWithResult('p.order', 'p1-c', { priority: 1 });
    // Due a minute ago: due before the others of its priority.
    await queue.schedule('p.order', 'p5-early', { priority: 5, at: past });
    expect(await queue.stats('p.order')).toMatchObject({ due: 9, scheduled: 0 });
    const seen = record(queue, 'p.order');
    await waitFor(() => seen.length === 9, 10_000, 'every job to run');
    expect(seen).toEqual(['p0-a', 'p0-b', 'p1-a', 'p1-b', 'p1-c', 'p5-a', 'p5-b', 'p5-early', 'p2_097_152']);
  });

  it('never starts a job before its due time, whatever its priority', async () => {
    const [queue] = await start(1);
    const at = Date.now() + 700;
    await queue.schedule('p.due', 'urgent-later', { priority: 0, at });
    await queue.schedule('p.due', 'lazy-now', { priority: 100 });
    const startedAt = new Map<string, number>();
    const seen = record(queue, 'p.due', (payload) => startedAt.set(payload, Date.now()));
    await waitFor(() => seen.length === 2, 10_000, 'both jobs to run');
    expect(seen).toEqual(['lazy-now', 'urgent-later']);
    expect(startedAt.get('urgent-later')).toBeGreaterThanOrEqual(at - 5);
  });

  it('orders jobs that come due together by priority (moved by the claim), and lists them as due meanwhile', async () => {
    const [queue] = await start(1);
    const at = Date.now() + 500;
    const jobs = [7, 3, 9, 0, 3, 1].map((priority, n) => ({ payload: `p${priority}#${n}`, priority, at, id: `j${n}` }));
    await queue.scheduleMany('p.later', jobs);
    await queue.schedule('p.later', 'p2-later', { priority: 2, at: at + 1 });
    expect(await queue.stats('p.later')).toMatchObject({ scheduled: 7, due: 0 });
    expect(await queue.get('p.later', 'j2')).toMatchObject({ state: 'scheduled', priority: 9 });
    await waitFor(async () => (await queue.stats('p.later')).due === 7, 10_000, 'the jobs to come due');
    expect(await queue.get('p.later', 'j2')).toMatchObject({ state: 'due', priority: 9 });
    const seen = record(queue, 'p.later');
    await waitFor(() => seen.length === 7, 10_000, 'every job to run');
    expect(seen).toEqual(['p0#3', 'p1#5', 'p2-later', 'p3#1', 'p3#4', 'p7#0', 'p9#2']);
  });

  it('refuses a priority that is not an integer from 0 to 2_097_152, or one given with a group, storing nothing', async () => {
    const [queue] = await start(1);
    for (const priority of [-1, 1.5, 2_097_153, Number.NaN, '1', null]) {
      await expect(queue.schedule('p.bad', 'x', { id: 'x', priority: priority as number })).rejects.toThrow(InvalidJobError);
    }
    await expect(queue.schedule('p.bad', 'x', { priority: 2_097_153 })).rejects.toThrow(
      /priority.*2097153.*use a whole number from 0 to 2097152/,
    );
    await expect(queue.schedule('p.bad', 'x', { group: 'g', priority: 3 })).rejects.toThrow(/give its jobs no priority/);
    await expect(queue.scheduleMany('p.bad', [{ payload: 'ok' }, { payload: 'bad', priority: -2 }])).rejects.toThrow(/\[1\]\.priority/);
    expect(await queue.stats('p.bad')).toMatchObject({ scheduled: 0, due: 0 });
    // Priority 0 with a group is the default, so it is accepted.
    await queue.schedule('p.bad', 'grouped', { group: 'g', priority: 0 });
    expect(await queue.stats('p.bad')).toMatchObject({ grouped: 1 });
  });

  it('keeps the priority through get, a failure and its retry, a reschedule and retryDead; replace sets a new one', async () => {
    const [queue] = await start(1, { delayQueue: { backoff: { delay: 1, jitter: 0 }, retention: { deadLetterMaxCount: 10 } } });
    await queue.schedule('p.keep', 'r', { id: 'r', priority: 4, delay: 60_000 });
    expect(await queue.get('p.keep', 'r')).toMatchObject({ state: 'scheduled', priority: 4 });
    expect(await queue.reschedule('p.keep', 'r', { delay: 0 })).toBe(true);
    expect(await queue.get('p.keep', 'r')).toMatchObject({ state: 'due', priority: 4 });
    await queue.schedule('p.keep', 'r2', { id: 'r', priority: 2, replace: true });
    expect(await queue.get('p.keep', 'r')).toMatchObject({ payload: 'r2', priority: 2 });
    await queue.schedule('p.keep', 'plain', { id: 'plain' });
    expect(await queue.get('p.keep', 'plain')).toMatchObject({ priority: 0 });

    await queue.cancel('p.keep', 'r');
    await queue.cancel('p.keep', 'plain');

    // A failed job waits for its retry with its priority, and is then taken before the lower ones.
    // The topic is paused while the others are scheduled, so that the claims see them all at once.
    const seen: string[] = [];
    queue.consume<string>(
      'p.keep',
      async (payload, job) => {
        seen.push(payload);
        if (payload === 'flaky' && job.attempt === 1) await queue.pause('p.keep');
        if (payload === 'doomed' || (payload === 'flaky' && job.attempt === 1)) throw new Error('no');
      },
      { concurrency: 1 },
    );
    await queue.schedule('p.keep', 'flaky', { id: 'flaky', priority: 1, maxAttempts: 2 });
    await waitFor(() => seen.length === 1, 10_000, 'the first attempt');
    await waitFor(async () => (await queue.get('p.keep', 'flaky'))?.lastError !== undefined, 5_000, 'the failure to be recorded');
    expect(await queue.get('p.keep', 'flaky')).toMatchObject({ priority: 1, lastError: 'Error: no' });
    await queue.scheduleMany(
      'p.keep',
      Array.from({ length: 3 }, (_, n) => ({ payload: `low${n}`, priority: 9 })),
    );
    await queue.schedule('p.keep', 'doomed', { id: 'doomed', priority: 3, maxAttempts: 1 });
    await waitFor(async () => (await queue.get('p.keep', 'flaky'))?.state === 'due', 5_000, 'the retry to come due');
    await queue.resume('p.keep');
    await waitFor(() => seen.length >= 3, 10_000, 'the retry and the dead letter');
    expect(seen.slice(0, 3)).toEqual(['flaky', 'flaky', 'doomed']);
    const [dead] = await queue.deadLetters('p.keep');
    expect(dead).toMatchObject({ id: 'doomed', priority: 3 });
    await waitFor(() => seen.length === 6, 10_000, 'the low jobs');
    await queue.pause('p.keep');
    await queue.schedule('p.keep', 'low-after', { priority: 9 });
    await queue.schedule('p.keep', 'high-after', { priority: 2 });
    expect(await queue.retryDead('p.keep', 'doomed')).toBe(1);
    expect(await queue.get('p.keep', 'doomed')).toMatchObject({ state: 'due', priority: 3 });
    await queue.resume('p.keep');
    await waitFor(() => seen.length === 9, 10_000, 'the requeued dead letter and the later jobs');
    expect(seen.slice(6)).toEqual(['high-after', 'doomed', 'low-after']);
  });

  it('a job put back by JobRateLimitedError keeps its priority: it runs before the less urgent jobs once the block ends', async () => {
    const [queue] = await start(1);
    const seen: string[] = [];
    queue.consume<string>(
      'p.limited',
      (payload) => {
        seen.push(payload);
        // The postponement undoes the attempt (job.attempt is 1 again): the first run alone is limited.
        if (payload === 'limited' && seen.length === 1) throw new JobRateLimitedError(1_000);
      },
      { concurrency: 1 },
    );
    await queue.schedule('p.limited', 'limited', { id: 'limited', priority: 1 });
    await waitFor(() => seen.length === 1, 10_000, 'the first attempt');
    await waitFor(async () => (await queue.get('p.limited', 'limited'))?.state === 'due', 10_000, 'the postponed job back in the queue');
    expect(await queue.get('p.limited', 'limited')).toMatchObject({ priority: 1, attempts: 0 });
    await queue.scheduleMany('p.limited', [
      { payload: 'low-a', priority: 5 },
      { payload: 'low-b', priority: 5 },
    ]);
    await waitFor(() => seen.length === 4, 10_000, 'every run after the block');
    expect(seen).toEqual(['limited', 'limited', 'low-a', 'low-b']);
  });

  it('cancels a due prioritised job; counts and get stay right while it waits', async () => {
    const [queue] = await start(1);
    await queue.schedule('p.cancel', 'a', { id: 'a', priority: 2 });
    await queue.schedule('p.cancel', 'b', { id: 'b', priority: 1 });
    await queue.schedule('p.cancel', 'c', { id: 'c' });
    expect(await queue.stats('p.cancel')).toMatchObject({ due: 3 });
    expect(await queue.cancel('p.cancel', 'b')).toBe(true);
    expect(await queue.get('p.cancel', 'b')).toBeNull();
    expect(await queue.stats('p.cancel')).toMatchObject({ due: 2 });
    const seen = record(queue, 'p.cancel');
    await waitFor(() => seen.length === 2, 10_000, 'the two jobs left');
    expect(seen).toEqual(['c', 'a']);
    await waitFor(async () => (await queue.stats('p.cancel')).active === 0, 5_000, 'the last acknowledgement');
    expect(await queue.stats('p.cancel')).toMatchObject({ due: 0, scheduled: 0, active: 0 });
  });

  it('two instances: jobs scheduled on both run once each, by priority when one consumer drains them', async () => {
    const [a, b] = await start(2);
    await a.scheduleMany(
      'p.two',
      Array.from({ length: 20 }, (_, n) => ({ payload: `a${n}`, priority: n % 2 === 0 ? 2 : 1, id: `a${n}` })),
    );
    await b.scheduleMany(
      'p.two',
      Array.from({ length: 20 }, (_, n) => ({ payload: `b${n}`, priority: n % 2 === 0 ? 2 : 1, id: `b${n}` })),
    );
    const seen = record(b, 'p.two');
    await waitFor(() => seen.length === 40, 10_000, 'every job');
    const priorityOf = (payload: string) => (Number(payload.slice(1)) % 2 === 0 ? 2 : 1);
    expect(seen.map(priorityOf)).toEqual([...Array(20).fill(1), ...Array(20).fill(2)]);
    expect(seen.slice(0, 20)).toEqual(
      [...seen.slice(0, 20)].sort((x, y) => (x[0] === y[0] ? Number(x.slice(1)) - Number(y.slice(1)) : x < y ? -1 : 1)),
    );

    // Consumers on both instances: every job once.
    const runs = new Map<string, number>();
    for (const q of [a, b]) {
      q.consume<string>(
        'p.both',
        (payload) => {
          runs.set(payload, (runs.get(payload) ?? 0) + 1);
        },
        { concurrency: 4 },
      );
    }
    await a.scheduleMany(
      'p.both',
      Array.from({ length: 300 }, (_, n) => ({ payload: `j${n}`, priority: n % 10, delay: n % 3 === 0 ? 50 : 0 })),
    );
    await waitFor(() => runs.size === 300, 20_000, 'every job');
    expect([...runs.values()].every((count) => count === 1)).toBe(true);
    await waitFor(async () => (await a.stats('p.both')).active === 0, 5_000, 'the last acknowledgements');
    expect(await a.stats('p.both')).toMatchObject({ due: 0, scheduled: 0, active: 0 });
  });
});
