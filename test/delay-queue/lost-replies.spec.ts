import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { RedisLockEvents, runInTransaction } from '../../lib/index.js';
import type { JobDeadEvent, JobRetriedEvent } from '../../lib/core/events/job-events.js';
import { ackJobsScript } from '../../lib/delay-queue/scripts/ack-jobs.lua.js';
import { cancelJobScript } from '../../lib/delay-queue/scripts/cancel-job.lua.js';
import { claimDueJobsScript } from '../../lib/delay-queue/scripts/claim-due-jobs.lua.js';
import { extendJobsScript } from '../../lib/delay-queue/scripts/extend-jobs.lua.js';
import { failJobScript } from '../../lib/delay-queue/scripts/fail-job.lua.js';
import { releaseJobsScript } from '../../lib/delay-queue/scripts/release-jobs.lua.js';
import { rescheduleJobScript } from '../../lib/delay-queue/scripts/reschedule-job.lua.js';
import { retryDeadJobsScript } from '../../lib/delay-queue/scripts/retry-dead-jobs.lua.js';
import { scheduleJobsScript } from '../../lib/delay-queue/scripts/schedule-jobs.lua.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { rawRedis, testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';
import { deferred, sleep, waitFor } from '../support/timing.js';
import { topicStats } from '../support/topic-stats.js';

type Script = { readonly sha: string; readonly source: string };

/**
 * Every job script must be safe to run twice: ioredis re-sends a command whose reply was lost when
 * it reconnects, so the script runs again. `FaultProxy.loseReply` drops the reply of one call after
 * Redis ran it. The app under test talks to Redis through the proxy; a second app on the same key
 * prefix talks to Redis directly (a peer process, and the observer).
 */
describe('Job scripts whose reply is lost (run twice)', () => {
  let proxy: FaultProxy;
  const apps: DelayTestApp[] = [];

  beforeAll(async () => {
    proxy = await FaultProxy.start({ port: Number(new URL(testRedisUrl()).port) });
    // Cached scripts: a lost reply must hit a run of the script, not a NOSCRIPT answer before the EVAL fallback.
    const redis = rawRedis();
    const scripts = [
      ackJobsScript,
      cancelJobScript,
      claimDueJobsScript,
      extendJobsScript,
      failJobScript,
      releaseJobsScript,
      rescheduleJobScript,
      retryDeadJobsScript,
      scheduleJobsScript,
    ];
    await Promise.all(scripts.map((script) => redis.script('LOAD', script.source)));
    redis.disconnect();
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });
  afterEach(async () => {
    proxy.setLatency(0);
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  afterAll(async () => {
    await proxy.stop();
    jest.restoreAllMocks();
  });

  /** An app through the proxy (`proxied`) and a direct one on the same key prefix. */
  async function pair(
    proxiedOptions: Parameters<typeof createDelayApp>[0] = {},
    directOptions: Parameters<typeof createDelayApp>[0] = {},
  ): Promise<{ proxied: DelayTestApp; direct: DelayTestApp; keyPrefix: string }> {
    const keyPrefix = uniquePrefix('lr');
    const proxied = await createDelayApp({ redis: proxy.url, ...proxiedOptions, keyPrefix });
    const direct = await createDelayApp({ ...directOptions, keyPrefix });
    apps.push(proxied, direct);
    return { proxied, direct, keyPrefix };
  }

  /** A call of `script` on `topic` (its first key is the topic's due set), optionally with `arg` among its arguments. */
  function callOf(script: Script, keyPrefix: string, topic: string, arg?: string) {
    return FaultProxy.script(
      script,
      (keysAndArgs) => keysAndArgs[0] === `${keyPrefix}:dq:{${topic}}:due` && (arg === undefined || keysAndArgs.includes(arg)),
    );
  }

  it('claim: a re-sent claim returns the same batch, so a job with maxAttempts 1 runs instead of dying unrun', async () => {
    const { proxied, direct, keyPrefix } = await pair({ delayQueue: { maxAttempts: 1, visibilityTimeout: 1_000 } });
    const dead: JobDeadEvent[] = [];
    proxied.app.get(RedisLockEvents).on('job.dead', (event) => dead.push(event));
    const id = await direct.queue.schedule('claim', { n: 1 });
    const lost = proxy.loseReply(callOf(claimDueJobsScript, keyPrefix, 'claim'));
    const runs: number[] = [];
    const consumer = proxied.queue.consume('claim', (_payload, job) => void runs.push(job.attempt));
    await lost;
    // Settled either way: run and acknowledged, or dead after its visibility ran out.
    await waitFor(
      async () => (await direct.queue.get('claim', id))?.state !== 'active' && (runs.length > 0 || dead.length > 0),
      10_000,
      'the job to settle',
    );
    await waitFor(async () => (await direct.queue.get('claim', id)) === null || dead.length > 0, 10_000, 'the acknowledgement');
    expect({ runs, dead: (await direct.queue.deadLetters('claim')).map((j) => j.id), deadEvents: dead.length }).toEqual({
      runs: [1],
      dead: [],
      deadEvents: 0,
    });
    await consumer.close();
  });

  it('claim: a batch of several jobs re-sent is delivered once each, none costing an extra attempt', async () => {
    const { proxied, direct, keyPrefix } = await pair({ delayQueue: { maxAttempts: 1, visibilityTimeout: 1_000 } });
    const ids = await direct.queue.scheduleMany(
      'claim.batch',
      [1, 2, 3, 4, 5].map((n) => ({ payload: n })),
    );
    const lost = proxy.loseReply(callOf(claimDueJobsScript, keyPrefix, 'claim.batch'));
    const runs: string[] = [];
    const consumer = proxied.queue.consume('claim.batch', (_payload, job) => void runs.push(`${job.id}@${job.attempt}`), {
      concurrency: 5,
    });
    await lost;
    await waitFor(
      async () => {
        const stats = await direct.queue.stats('claim.batch');
        return stats.due + stats.scheduled + stats.active === 0;
      },
      10_000,
      'the batch to settle',
    );
    expect([...runs].sort()).toEqual(ids.map((id) => `${id}@1`).sort());
    expect((await direct.queue.stats('claim.batch')).dead).toBe(0);
    await consumer.close();
  });

  it('ack: a re-sent acknowledgement leaves the job done once, and the consumer goes on', async () => {
    const { proxied, direct, keyPrefix } = await pair();
    const id = await direct.queue.schedule('ack', 1, { id: 'ack-1' });
    // The acknowledgement rides on the next claim or goes alone: lose whichever carries the id.
    const carriesAck = (args: readonly string[]) =>
      callOf(ackJobsScript, keyPrefix, 'ack', id)(args) || callOf(claimDueJobsScript, keyPrefix, 'ack', id)(args);
    const lost = proxy.loseReply(carriesAck);
    const runs: string[] = [];
    const consumer = proxied.queue.consume('ack', (_payload, job) => void runs.push(`${job.id}@${job.attempt}`));
    await lost;
    await waitFor(async () => (await direct.queue.get('ack', id)) === null, 10_000, 'the acknowledgement');
    await direct.queue.schedule('ack', 2, { id: 'ack-2' });
    await waitFor(() => runs.length === 2, 10_000, 'the next job');
    expect(runs).toEqual(['ack-1@1', 'ack-2@1']);
    await consumer.close();
  });

  it('fail: a re-sent failure record counts one attempt and still reports the retry', async () => {
    const { proxied, direct, keyPrefix } = await pair({ delayQueue: { maxAttempts: 3, backoff: { delay: 50, jitter: 0 } } });
    const retried: JobRetriedEvent[] = [];
    proxied.app.get(RedisLockEvents).on('job.retried', (event) => retried.push(event));
    const id = await direct.queue.schedule('fail', 1, { id: 'fail-1' });
    const lost = proxy.loseReply(callOf(failJobScript, keyPrefix, 'fail', id));
    const attempts: number[] = [];
    const consumer = proxied.queue.consume('fail', (_payload, job) => {
      attempts.push(job.attempt);
      if (job.attempt === 1) throw new Error('first try fails');
    });
    await lost;
    await waitFor(async () => (await direct.queue.get('fail', id)) === null, 10_000, 'the second attempt to succeed');
    expect(attempts).toEqual([1, 2]);
    expect(retried.map((e) => ({ id: e.id, attempt: e.attempt }))).toEqual([{ id, attempt: 1 }]);
    await consumer.close();
  });

  it('fail: a re-sent last failure buries the job once and still reports it dead', async () => {
    const { proxied, direct, keyPrefix } = await pair({ delayQueue: { maxAttempts: 1 } });
    const dead: JobDeadEvent[] = [];
    proxied.app.get(RedisLockEvents).on('job.dead', (event) => dead.push(event));
    const id = await direct.queue.schedule('fail.last', 1, { id: 'last-1' });
    const lost = proxy.loseReply(callOf(failJobScript, keyPrefix, 'fail.last', id));
    const consumer = proxied.queue.consume('fail.last', () => {
      throw new Error('always fails');
    });
    await lost;
    await waitFor(async () => (await direct.queue.get('fail.last', id))?.state === 'dead', 10_000, 'the dead letter');
    await waitFor(() => dead.length > 0, 5_000, 'the job.dead event');
    expect(dead.map((e) => e.id)).toEqual([id]);
    expect((await direct.queue.deadLetters('fail.last')).map((j) => [j.id, j.attempts])).toEqual([[id, 1]]);
    await consumer.close();
  });

  it('extend: a re-sent visibility extension keeps the handler running and the job delivered once', async () => {
    // 1.5 s: the reconnect that re-sends the extension (several round trips) fits within the
    // deadline left on a loaded machine; a 600 ms timeout lapsed there in one CI run.
    const { proxied, direct, keyPrefix } = await pair({ delayQueue: { visibilityTimeout: 1_500 } });
    const id = await direct.queue.schedule('extend', 1, { id: 'ext-1' });
    const lost = proxy.loseReply(callOf(extendJobsScript, keyPrefix, 'extend', id));
    const runs: Array<{ attempt: number; aborted: boolean }> = [];
    const consumer = proxied.queue.consume('extend', async (_payload, job) => {
      await lost;
      await sleep(1_600); // longer than the visibility timeout: only further extensions keep the claim
      runs.push({ attempt: job.attempt, aborted: job.signal.aborted });
    });
    await waitFor(async () => (await direct.queue.get('extend', id)) === null, 10_000, 'the job to finish');
    await sleep(1_600); // a redelivery would come after the visibility timeout
    expect(runs).toEqual([{ attempt: 1, aborted: false }]);
    await consumer.close();
  });

  it('schedule: a re-sent schedule stores one job', async () => {
    const { proxied, direct, keyPrefix } = await pair();
    const lost = proxy.loseReply(callOf(scheduleJobsScript, keyPrefix, 'schedule'));
    const id = await proxied.queue.schedule('schedule', { n: 1 }, { delay: 60_000 });
    await lost;
    expect(await direct.queue.stats('schedule')).toEqual(topicStats({ scheduled: 1 }));
    expect((await direct.queue.get('schedule', id))?.payload).toEqual({ n: 1 });
  });

  it('schedule: a re-sent replace does not replace the job a consumer took meanwhile (it runs once)', async () => {
    const { proxied, direct, keyPrefix } = await pair();
    await direct.queue.schedule('replace', 'old', { id: 'rep-1', delay: 60_000 });
    const runs: string[] = [];
    const hold = deferred();
    const consumer = direct.queue.consume(
      'replace',
      async (payload: string) => {
        runs.push(payload);
        await hold.promise;
      },
      { concurrency: 2 },
    );
    await sleep(100);
    // Slow the re-send down: the direct consumer claims the replaced job before it arrives.
    proxy.setLatency(150);
    const lost = proxy.loseReply(callOf(scheduleJobsScript, keyPrefix, 'replace'));
    await proxied.queue.schedule('replace', 'new', { id: 'rep-1', replace: true });
    await lost;
    await sleep(500);
    hold.resolve();
    await waitFor(async () => (await direct.queue.get('replace', 'rep-1')) === null, 10_000, 'the job to finish');
    await sleep(200);
    expect(runs).toEqual(['new']);
    await consumer.close();
  });

  it('schedule after COMMIT: a write that landed but failed on the client is retried without scheduling the job twice', async () => {
    // maxRetriesPerRequest 0: the lost reply rejects the write (no re-send by ioredis); the
    // after-commit retry writes it again, after the fast direct consumer has already run and acknowledged it.
    const { proxied, direct, keyPrefix } = await pair({ redis: { host: '127.0.0.1', port: proxy.port, maxRetriesPerRequest: 0 } });
    const runs: string[] = [];
    const consumer = direct.queue.consume('after.commit', (_payload, job) => void runs.push(job.id));
    await sleep(100);
    const lost = proxy.loseReply(callOf(scheduleJobsScript, keyPrefix, 'after.commit'));
    await runInTransaction(() => proxied.queue.schedule('after.commit', 1, { id: 'tx-1' }));
    await lost;
    await waitFor(() => runs.length >= 1, 10_000, 'the job to run');
    await sleep(1_000);
    expect(runs).toEqual(['tx-1']);
    expect(proxied.queue.pendingScheduleWrites).toBe(0);
    expect(await direct.queue.get('after.commit', 'tx-1')).toBeNull();
    await consumer.close();
  });

  it('cancel: a re-sent cancel still answers that the job existed', async () => {
    const { proxied, direct, keyPrefix } = await pair();
    const id = await direct.queue.schedule('cancel', 1, { delay: 60_000 });
    const lost = proxy.loseReply(callOf(cancelJobScript, keyPrefix, 'cancel', id));
    expect(await proxied.queue.cancel('cancel', id)).toBe(true);
    await lost;
    expect(await direct.queue.get('cancel', id)).toBeNull();
    expect(await proxied.queue.cancel('cancel', id)).toBe(false);
  });

  it('reschedule: a re-sent reschedule answers as the first run did, even if a consumer took the job meanwhile', async () => {
    const { proxied, direct, keyPrefix } = await pair();
    const id = await direct.queue.schedule('reschedule', 1, { delay: 60_000 });
    const runs: string[] = [];
    const consumer = direct.queue.consume('reschedule', (_payload, job) => void runs.push(job.id));
    await sleep(100);
    proxy.setLatency(150);
    const lost = proxy.loseReply(callOf(rescheduleJobScript, keyPrefix, 'reschedule', id));
    expect(await proxied.queue.reschedule('reschedule', id, { delay: 0 })).toBe(true);
    await lost;
    await waitFor(() => runs.length === 1, 10_000, 'the rescheduled job to run');
    expect(runs).toEqual([id]);
    await consumer.close();
  });

  it('reschedule: a re-sent reschedule to a time keeps that time and one job', async () => {
    const { proxied, direct, keyPrefix } = await pair();
    const id = await direct.queue.schedule('reschedule.at', 1, { delay: 60_000 });
    const at = Date.now() + 120_000;
    const lost = proxy.loseReply(callOf(rescheduleJobScript, keyPrefix, 'reschedule.at', id));
    expect(await proxied.queue.reschedule('reschedule.at', id, { at })).toBe(true);
    await lost;
    const job = await direct.queue.get('reschedule.at', id);
    expect(job?.state).toBe('scheduled');
    expect(job?.scheduledAt?.getTime()).toBe(at);
    expect((await direct.queue.stats('reschedule.at')).scheduled).toBe(1);
  });

  it('retryDead: a re-sent retry of dead letters answers as the first run did and requeues each once', async () => {
    const { proxied, direct, keyPrefix } = await pair();
    const consumer = direct.queue.consume(
      'retry.dead',
      () => {
        throw new Error('dies');
      },
      { maxAttempts: 1 },
    );
    const ids = await direct.queue.scheduleMany(
      'retry.dead',
      [1, 2, 3].map((n) => ({ payload: n, id: `dead-${n}` })),
    );
    await waitFor(async () => (await direct.queue.stats('retry.dead')).dead === 3, 10_000, 'three dead letters');
    await consumer.close();
    const one = proxy.loseReply(callOf(retryDeadJobsScript, keyPrefix, 'retry.dead', 'dead-1'));
    expect(await proxied.queue.retryDead('retry.dead', 'dead-1')).toBe(1);
    await one;
    const all = proxy.loseReply(callOf(retryDeadJobsScript, keyPrefix, 'retry.dead'));
    expect(await proxied.queue.retryDead('retry.dead')).toBe(2);
    await all;
    expect(await direct.queue.stats('retry.dead')).toMatchObject({ due: 3, dead: 0 });
    expect((await Promise.all(ids.map((id) => direct.queue.get('retry.dead', id)))).map((j) => j?.attempts)).toEqual([0, 0, 0]);
  });

  it('marker: a wake-up whose BZPOPMIN reply is lost (blocking connection reset) still gets the job run at once', async () => {
    const { proxied, direct, keyPrefix } = await pair();
    const runs: string[] = [];
    const marker = `${keyPrefix}:dq:{marker}:marker`;
    // Armed before the consumer parks: its first BZPOPMIN is the one whose reply (the pop) is lost.
    const onMarker = (args: readonly string[]) => args[0].toLowerCase() === 'bzpopmin' && args[1] === marker;
    const lost = proxy.loseReply(onMarker);
    const parked = proxy.observe(onMarker);
    // maxIdleWait 20 s: only the lost wake-up itself can bring the job in time.
    const consumer = proxied.queue.consume('marker', (_payload, job) => void runs.push(job.id), { maxIdleWait: 20_000 });
    await waitFor(() => parked.count >= 1, 10_000, 'the consumer to park on the marker');
    parked.stop();
    const scheduledAt = performance.now();
    const id = await direct.queue.schedule('marker', 1);
    await lost;
    await waitFor(() => runs.length === 1, 10_000, 'the job to run');
    expect(runs).toEqual([id]);
    expect(performance.now() - scheduledAt).toBeLessThan(5_000);
    await consumer.close();
  });

  it('release at shutdown: re-sent hand-backs return each buffered job once, with its attempt given back', async () => {
    const { proxied, direct, keyPrefix } = await pair();
    const ids = await direct.queue.scheduleMany(
      'release',
      [0, 1, 2, 3].map((n) => ({ payload: n })),
    );
    const started = deferred();
    const finish = deferred();
    const runs: string[] = [];
    // Concurrency 1: job 0 returns at once, so the consumer claims one job ahead (prefetch); job 1 runs,
    // job 2 waits in the prefetch buffer and is handed back at close().
    const consumer = proxied.queue.consume(
      'release',
      async (payload, job) => {
        runs.push(`${job.id}@${job.attempt}`);
        if (payload === 0) return;
        started.resolve();
        await finish.promise;
      },
      { concurrency: 1 },
    );
    await started.promise;
    const lost = proxy.loseReply(callOf(releaseJobsScript, keyPrefix, 'release'));
    const closing = consumer.close();
    await lost;
    finish.resolve();
    await closing;
    const peer = direct.queue.consume('release', (_payload, job) => void runs.push(`${job.id}@${job.attempt}`));
    await waitFor(
      async () => {
        const stats = await direct.queue.stats('release');
        return runs.length >= 4 && stats.due + stats.active === 0;
      },
      10_000,
      'the handed-back jobs to run',
    );
    await sleep(200);
    expect([...runs].sort()).toEqual(ids.map((id) => `${id}@1`).sort());
    await peer.close();
  });
});
