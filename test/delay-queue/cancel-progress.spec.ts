import { JobCancelledError, RedisLockEvents, type JobContext } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { CancelListener } from '../../lib/delay-queue/consumer/cancel-listener.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import { uniquePrefix, useRawRedis } from '../support/test-app.js';
import { deferred, waitFor } from '../support/timing.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';

failOnUnhandledRejections();

/**
 * Cancel of a running job × JobContext.progress(). Docs: "When the notice is lost
 * … the consumer learns it at its next visibility extension … with the same JobCancelledError";
 * "Whatever the handler does next, returning or throwing, the job is … reported by the job.cancelled
 * event instead of job.succeeded / job.failed"; progress(): "a delivery that lost its job (cancelled,
 * …) writes nothing, its signal is aborted, and the promise rejects with JobVisibilityLostError (or
 * the signal's reason)".
 */
describe('progress() of a job cancelled while it runs', () => {
  const redis = useRawRedis();
  let a: DelayTestApp;
  let c: DelayTestApp;

  beforeAll(async () => {
    muteNestLogger('error');
    const keyPrefix = uniquePrefix('rvcp');
    [a, c] = await Promise.all([1, 2].map(() => createDelayApp({ keyPrefix, delayQueue: { maxAttempts: 1 } })));
    void new RedisKeySpace(keyPrefix);
  });
  afterAll(async () => {
    await Promise.all([a, c].map((t) => t?.close()));
  });

  it('a progress() call after a lost cancel notice learns the cancel: JobCancelledError, and job.cancelled is reported', async () => {
    const topic = 'rv.cancel-progress';
    const outcomes: string[] = [];
    const events = a.app.get(RedisLockEvents);
    for (const name of ['job.cancelled', 'job.succeeded', 'job.failed'] as const) {
      events.on(name, (event: { topic: string }) => {
        if (event.topic === topic) outcomes.push(name);
      });
    }
    const started = deferred<JobContext>();
    const cancelled = deferred();
    let progressError: unknown;
    const consumer = a.queue.consume(
      topic,
      async (_payload, job) => {
        started.resolve(job);
        await cancelled.promise;
        // The handler reports progress as it goes, as the docs show.
        try {
          await job.progress({ step: 2 });
        } catch (error) {
          progressError = error;
        }
        throw job.signal.reason;
      },
      // No extension within the test (every 20 s): only the notice or progress() can tell.
      { visibilityTimeout: 60_000 },
    );
    // The instance's subscriber goes away (as in cancel-running.spec.ts): the notice is lost.
    await waitFor(
      async () => (await redis.pubsub('NUMSUB', new RedisKeySpace(a.keyPrefix).topic(topic).cancelChannel))[1] === 1,
      5_000,
      'the subscription',
    );
    a.app.get(CancelListener).close();
    const id = await c.queue.schedule(topic, 'x');
    const job = await started.promise;
    expect(await c.queue.cancel(topic, id)).toBe(true);
    cancelled.resolve();
    await waitFor(() => outcomes.length > 0, 5_000, 'the outcome event');
    await consumer.close();
    expect({ progressError: (progressError as Error)?.name, reason: (job.signal.reason as Error)?.name, outcomes }).toEqual({
      progressError: JobCancelledError.name,
      reason: JobCancelledError.name,
      outcomes: ['job.cancelled'],
    });
  });
});
