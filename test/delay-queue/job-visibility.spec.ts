import { jest } from '@jest/globals';
import { JobCancelledError, type DelayQueueService } from '../../lib/index.js';
import { createDelayApp, useDelayApp } from './support/delay-test-app.js';
import { deferred, sleep, waitFor } from '../support/timing.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';

failOnUnhandledRejections();

/**
 * A claimed job stays invisible to other consumers while its handler runs (its visibility is
 * extended), and the handler's `job.signal` aborts once the claim is gone (JobCancelledError when it
 * was cancelled: cancel-running.spec.ts). Jobs of a consumer that died come back when their visibility runs out: crash-recovery.spec.ts.
 */
describe('Job visibility', () => {
  beforeAll(() => muteNestLogger('error'));
  const t = useDelayApp({
    delayQueue: { backoff: { delay: 100, factor: 2, jitter: 0 }, retention: { deadLetterMaxCount: 100 } },
  });
  let queue: DelayQueueService;
  beforeAll(() => (queue = t.queue));
  afterAll(() => jest.restoreAllMocks());

  it('extends the visibility of a long handler so that no other consumer gets its job', async () => {
    const other = await createDelayApp({ keyPrefix: t.keyPrefix });
    const runs: string[] = [];
    // 1 s visibility (extended every 333 ms), handlers three times as long: with 300 ms, a stall of a
    // loaded machine could let the claim lapse, and the job would rightly go to \`b\`.
    const options = { visibilityTimeout: 1_000, maxIdleWait: 300 };
    const a = queue.consume(
      'long',
      async () => {
        runs.push('a');
        await sleep(3_000);
      },
      options,
    );
    const b = other.queue.consume(
      'long',
      async () => {
        runs.push('b');
        await sleep(3_000);
      },
      options,
    );
    const id = await queue.schedule('long', 1);
    await waitFor(() => runs.length === 1, 5_000, 'the job to start');
    await sleep(3_300);
    expect(runs).toHaveLength(1);
    await waitFor(async () => (await queue.get('long', id)) === null, 5_000, 'the acknowledgement');
    await Promise.all([a.close(), b.close()]);
    await other.close();
  });

  it('aborts job.signal when the running job is cancelled', async () => {
    const started = deferred<AbortSignal>();
    const finished = deferred<unknown>();
    const consumer = queue.consume(
      'abort',
      async (_payload, job) => {
        started.resolve(job.signal);
        await new Promise((resolve) => job.signal.addEventListener('abort', resolve, { once: true }));
        finished.resolve(job.signal.reason);
      },
      { visibilityTimeout: 300 },
    );
    const id = await queue.schedule('abort', 1);
    const signal = await started.promise;
    expect(signal.aborted).toBe(false);
    expect(await queue.cancel('abort', id)).toBe(true);
    const reason = await finished.promise;
    expect(reason).toBeInstanceOf(JobCancelledError);
    expect((reason as JobCancelledError).jobId).toBe(id);
    await consumer.close();
    expect(await queue.get('abort', id)).toBeNull();
  });
});
