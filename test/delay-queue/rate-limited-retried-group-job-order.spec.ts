import { JobRateLimitedError, RedisLockEvents, type JobRateLimitedEvent } from '../../lib/index.js';
import { useDelayInstances } from '../delay-queue/support/delay-instances.js';
import { waitFor } from '../support/timing.js';

/**
 * JobRateLimitedError with groups: a job that failed once (waiting for its retry, it keeps its group's
 * turn) and is then rate limited still runs before the later jobs of its group, and so does a job
 * that was never retried (the control case).
 */
describe('a retried job of a group, then rate limited', () => {
  const apps = useDelayInstances('rev-rl-retry');

  it.each([
    ['one instance', 1],
    ['two instances configured differently', 2],
  ])('%s: the job runs again before the later jobs of its group', async (_name, n) => {
    const started = await apps.start(n, { delayQueue: { maxAttempts: 3, backoff: { delay: 10, jitter: 0 } } });
    const limited: JobRateLimitedEvent[] = [];
    const runs: string[] = [];
    const handler = (payload: string, job: { attempt: number }) => {
      runs.push(`${payload}@${job.attempt}`);
      if (payload === 'g1' && job.attempt === 1) throw new Error('first attempt fails');
      if (payload === 'g1' && runs.filter((r) => r === 'g1@2').length === 1) throw new JobRateLimitedError(200);
    };
    started.forEach((app, i) => {
      app.app.get(RedisLockEvents).on('job.rate-limited', (event) => void limited.push(event));
      app.queue.consume<string>('rev.g', handler, { concurrency: i === 0 ? 1 : 5 });
    });
    const [a] = started;
    await a.queue.scheduleMany('rev.g', [
      { payload: 'g1', group: 'g' },
      { payload: 'g2', group: 'g' },
      { payload: 'g3', group: 'g' },
    ]);
    await waitFor(async () => runs.length === 5 && (await a.queue.stats('rev.g')).active === 0, 10_000, 'all runs');
    expect(limited).toHaveLength(1);
    expect(runs).toEqual(['g1@1', 'g1@2', 'g1@2', 'g2@1', 'g3@1']);
  });

  it('control (holds): a job not first in its group, never retried, runs again before the later jobs of its group', async () => {
    const [a] = await apps.start(1);
    const runs: string[] = [];
    a.queue.consume<string>('rev.g2', (payload) => {
      runs.push(payload);
      if (payload === 'g1' && runs.filter((r) => r === 'g1').length === 1) throw new JobRateLimitedError(200);
    });
    await a.queue.scheduleMany('rev.g2', [
      { payload: 'g0', group: 'g' },
      { payload: 'g1', group: 'g' },
      { payload: 'g2', group: 'g' },
      { payload: 'g3', group: 'g' },
    ]);
    await waitFor(async () => runs.length === 5 && (await a.queue.stats('rev.g2')).active === 0, 10_000, 'all runs');
    expect(runs).toEqual(['g0', 'g1', 'g1', 'g2', 'g3']);
  });
});
