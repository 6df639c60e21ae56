import { JobRateLimitedError, RedisLockEvents, type JobRateLimitedEvent } from '../../lib/index.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { postponeRateLimitedJobScript } from '../../lib/delay-queue/scripts/postpone-rate-limited-job.lua.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { createDelayApp, type DelayTestApp } from '../delay-queue/support/delay-test-app.js';
import { rawRedis, testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { deferred, waitFor } from '../support/timing.js';

/**
 * JobRateLimitedError thrown by a handler whose claim was lost meanwhile: instance A's link goes silent
 * while its handler runs; the job's visibility passes and instance B's claim (topic paused: recovery
 * only) brings it back to the queue, attempt spent. A's handler then throws JobRateLimitedError.
 * Nothing is moved, no block is set, and nothing reports a postpone (docs/delayed-jobs.md, "Rate
 * limited by the API you call", Limits).
 */
describe('JobRateLimitedError from a delivery whose visibility already passed', () => {
  const apps: DelayTestApp[] = [];
  let proxy: FaultProxy | undefined;
  afterAll(async () => {
    proxy?.heal();
    await Promise.all(apps.map((a) => a.close()));
    await proxy?.stop();
  });

  it('reports no rate-limited postpone and no block it did not make', async () => {
    const port = Number(new URL(testRedisUrl()).port);
    proxy = await FaultProxy.start({ port });
    const keyPrefix = uniquePrefix('rl-lost');
    const topic = 'rl.lost';
    const a = await createDelayApp({ redis: proxy.url, keyPrefix, unreachableTimeout: 20_000 });
    const b = await createDelayApp({ keyPrefix });
    apps.push(a, b);
    const redis = rawRedis();
    const keys = new RedisKeySpace(keyPrefix).topic(topic);
    const events: JobRateLimitedEvent[] = [];
    a.app.get(RedisLockEvents).on('job.rate-limited', (event) => void events.push(event));
    const started = deferred<void>();
    const recovered = deferred<void>();
    a.queue.consume(
      topic,
      async () => {
        started.resolve();
        await recovered.promise;
        throw new JobRateLimitedError(60_000);
      },
      { visibilityTimeout: 500 },
    );
    await a.queue.schedule(topic, 1, { id: 'j', maxAttempts: 3 });
    await started.promise;
    await b.queue.pause(topic);
    b.queue.consume(topic, () => undefined, { visibilityTimeout: 500 });
    proxy.blackhole();
    // B's claims (paused: recovery only) bring the job back once its visibility passed.
    await waitFor(
      async () => {
        await redis.zadd(keys.marker, 0, 'wake');
        return (await redis.zscore(keys.active, 'j')) === null && (await redis.zscore(keys.due, 'j')) !== null;
      },
      10_000,
      'the job back in the queue',
    );
    const postpones = proxy.observe(FaultProxy.script(postponeRateLimitedJobScript));
    recovered.resolve();
    await waitFor(() => postpones.count > 0, 10_000, "A's postpone on the wire");
    proxy.heal();
    // A's close waits for its settlement writes (the postpone) to be answered.
    await a.close();
    const blocked = await redis.exists(keys.blocked);
    redis.disconnect();
    // Expected: nothing reported as postponed (nothing was moved, nothing blocked); observed: one job.rate-limited, blockedUntilMs -1.
    expect({ events: events.map((e) => ({ id: e.id, blockedUntilMs: e.blockedUntilMs })), blocked }).toEqual({ events: [], blocked: 0 });
  }, 30_000);
});
