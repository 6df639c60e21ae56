import { jest } from '@jest/globals';
import { InvalidJobError, JobVisibilityLostError, type DelayQueueService, type JobContext } from '../../lib/index.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { completedJob } from './support/completed-job.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import { deferred, waitFor } from '../support/timing.js';

/**
 * `JobContext.progress(value)`: visible through get() while the job runs and after, written only
 * while this delivery holds the job (claim token checked in Redis), refused for values JSON would change.
 */
describe('JobContext.progress()', () => {
  let t: DelayTestApp;
  let queue: DelayQueueService;

  beforeAll(async () => {
    muteNestLogger('warn', 'error'); // retries and dead letters on purpose
    t = await createDelayApp({ delayQueue: { backoff: { delay: 50, jitter: 0 } } });
    queue = t.queue;
  });
  afterAll(async () => {
    await t.close();
    jest.restoreAllMocks();
  });

  it('shows the latest progress through get() while the job runs, and keeps it with the completed job', async () => {
    const step = deferred();
    const finish = deferred();
    const consumer = queue.consume(
      'report',
      async (_payload, job) => {
        await job.progress(10);
        await job.progress({ done: 3, of: 4, note: 'a "quoted", "e": text,"p":1' });
        step.resolve();
        await finish.promise;
        return 'ok';
      },
      { keepCompleted: { count: 10 } },
    );
    await queue.schedule('report', { rows: [1, 2, 3, 4] }, { id: 'r1' });
    await step.promise;
    expect(await queue.get('report', 'r1')).toMatchObject({
      state: 'active',
      payload: { rows: [1, 2, 3, 4] },
      progress: { done: 3, of: 4, note: 'a "quoted", "e": text,"p":1' },
    });
    finish.resolve();
    const done = await completedJob(queue, 'report', 'r1');
    expect(done).toMatchObject({ result: 'ok', payload: { rows: [1, 2, 3, 4] }, progress: { done: 3, of: 4 } });
    await consumer.close();
  });

  it('keeps the progress through a retry, and the failure is recorded after it', async () => {
    const seen: unknown[] = [];
    const consumer = queue.consume(
      'flaky',
      async (_payload, job) => {
        seen.push((await queue.get('flaky', job.id))?.progress);
        await job.progress(job.attempt * 50);
        if (job.attempt === 1) throw new Error('first attempt fails');
      },
      { keepCompleted: { count: 10 } },
    );
    await queue.schedule('flaky', null, { id: 'f1' });
    const done = await completedJob(queue, 'flaky', 'f1');
    expect(seen).toEqual([undefined, 50]);
    expect(done).toMatchObject({ attempts: 2, progress: 100, lastError: 'Error: first attempt fails' });
    await consumer.close();
  });

  it(
    'a delivery that lost its job writes nothing: progress() rejects and aborts its signal; the new ' + 'delivery’s progress stands',
    async () => {
      const contexts = new Map<string, JobContext>();
      const release = deferred();
      const consumer = queue.consume<string>(
        'taken',
        async (version, job) => {
          contexts.set(version, job);
          await release.promise;
        },
        { concurrency: 2 },
      );
      await queue.schedule('taken', 'old', { id: 'j' });
      await waitFor(() => contexts.has('old'), 5_000, 'the first delivery');
      // Replaced while running: the same id is claimed again, under a new token, by a second delivery.
      await queue.schedule('taken', 'new', { id: 'j', replace: true });
      await waitFor(() => contexts.has('new'), 5_000, 'the second delivery');
      const stale = contexts.get('old')!;
      const current = contexts.get('new')!;
      await current.progress('new delivery');
      await expect(stale.progress('stale delivery')).rejects.toBeInstanceOf(JobVisibilityLostError);
      expect(stale.signal.aborted).toBe(true);
      expect(current.signal.aborted).toBe(false);
      expect(await queue.get('taken', 'j')).toMatchObject({ state: 'active', payload: 'new', progress: 'new delivery' });
      // Once the job is gone, the current delivery's late progress is refused as well and writes nothing.
      await queue.cancel('taken', 'j');
      await expect(current.progress('after cancel')).rejects.toBeInstanceOf(Error);
      expect(await queue.get('taken', 'j')).toBeNull();
      release.resolve();
      await consumer.close();
    },
  );

  it('refuses a value JSON would change, or a large one, with InvalidJobError, and writes nothing', async () => {
    const outcomes: unknown[] = [];
    const consumer = queue.consume('odd', async (_payload, job) => {
      for (const value of [new Date(), { n: 10n }, 'x'.repeat(9_000)])
        outcomes.push(await job.progress(value).catch((error: unknown) => error));
      outcomes.push((await queue.get('odd', job.id))?.progress);
    });
    await queue.schedule('odd', null, { id: 'o' });
    await waitFor(() => outcomes.length === 4, 5_000, 'the handler');
    expect(outcomes.slice(0, 3).map((error) => error instanceof InvalidJobError && error.message)).toEqual([
      expect.stringMatching(/progress.*Date/),
      expect.stringMatching(/progress\.n.*BigInt/),
      expect.stringMatching(/progress.*over 8192/),
    ]);
    expect(outcomes[3]).toBeUndefined();
    await consumer.close();
  });
});
