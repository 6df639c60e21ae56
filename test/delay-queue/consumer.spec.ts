import { jest } from '@jest/globals';
import { DelayQueueClosedError, InvalidOptionsError, type DelayQueueService, type JobContext } from '../../lib/index.js';
import { DuplicateDelayedHandlerError } from '../../lib/core/errors/duplicate-delayed-handler.error.js';
import { useRawRedis } from '../support/test-app.js';
import { createDelayApp, useDelayApp } from './support/delay-test-app.js';
import { deferred, sleep, waitFor } from '../support/timing.js';
import { watchEventLoopStalls } from '../support/event-loop-stalls.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { topicStats } from '../support/topic-stats.js';

failOnUnhandledRejections();

describe('DelayQueueService: consumers', () => {
  beforeAll(() => muteNestLogger('error')); // dead letters are logged as errors; these specs cause them on purpose
  const t = useDelayApp({
    delayQueue: { backoff: { delay: 100, factor: 2, jitter: 0 }, retention: { deadLetterMaxCount: 100 } },
  });
  const redis = useRawRedis();
  let queue: DelayQueueService;
  beforeAll(() => (queue = t.queue));
  afterAll(() => jest.restoreAllMocks());

  it('never runs a job before its due time, and runs it promptly after', async () => {
    // The time this process could run nothing between a job's due time and its run (a loaded CI
    // host, a long GC pause) is not held against the job's promptness.
    const stalls = watchEventLoopStalls();
    const runs: Array<{ payload: number; lateness: number; ownDelay: number }> = [];
    const consumer = queue.consume<number>(
      'lateness',
      (payload, job) => {
        const now = Date.now();
        const due = job.scheduledAt.getTime();
        runs.push({ payload, lateness: now - due, ownDelay: now - due - stalls.within(due, now) });
      },
      { concurrency: 4 },
    );
    const delays = Array.from({ length: 30 }, (_, i) => 100 + i * 40);
    const scheduledAt = Date.now();
    await queue.scheduleMany(
      'lateness',
      delays.map((delay, i) => ({ payload: i, delay })),
    );
    await waitFor(() => runs.length === delays.length, 10_000, 'all jobs to run');
    stalls.stop();
    for (const run of runs) {
      expect(run.lateness).toBeGreaterThanOrEqual(0);
      expect(run.ownDelay).toBeLessThan(1_000);
    }
    // Seen from the caller's clock too: nothing ran before its delay had passed.
    expect(Math.min(...runs.map((r) => r.lateness))).toBeGreaterThanOrEqual(0);
    expect(Date.now() - scheduledAt).toBeGreaterThanOrEqual(Math.max(...delays));
    await consumer.close();
  });

  it('runs jobs due in the same millisecond in the order they were scheduled', async () => {
    const order: number[] = [];
    const consumer = queue.consume<number>('fifo', (payload) => {
      order.push(payload);
    });
    const at = Date.now() + 300;
    await queue.scheduleMany(
      'fifo',
      Array.from({ length: 40 }, (_, i) => ({ payload: i, at })),
    );
    await queue.schedule('fifo', 40, { at });
    await waitFor(() => order.length === 41, 10_000, 'all jobs to run');
    expect(order).toEqual(Array.from({ length: 41 }, (_, i) => i));
    await consumer.close();
  });

  it('runs at most `concurrency` handlers at once', async () => {
    let running = 0;
    let peak = 0;
    let done = 0;
    const consumer = queue.consume(
      'concurrency',
      async () => {
        running++;
        peak = Math.max(peak, running);
        await sleep(30);
        running--;
        done++;
      },
      { concurrency: 3 },
    );
    await queue.scheduleMany(
      'concurrency',
      Array.from({ length: 15 }, (_, i) => ({ payload: i })),
    );
    await waitFor(() => done === 15, 10_000, 'all jobs to finish');
    expect(peak).toBe(3);
    await consumer.close();
  });

  it('acknowledges a finished job and keeps nothing of it', async () => {
    let ran = 0;
    const consumer = queue.consume('ack', () => {
      ran++;
    });
    const ids = await queue.scheduleMany(
      'ack',
      Array.from({ length: 10 }, (_, i) => ({ payload: i })),
    );
    await waitFor(() => ran === 10, 10_000, 'all jobs to run');
    await waitFor(async () => (await queue.stats('ack')).active === 0, 5_000, 'acknowledgements');
    expect(await queue.get('ack', ids[0])).toBeNull();
    const keys = [
      `${t.keyPrefix}:dq:{ack}:due`,
      `${t.keyPrefix}:dq:{ack}:jobs`,
      `${t.keyPrefix}:dq:{ack}:active`,
      `${t.keyPrefix}:dq:{ack}:dead`,
    ];
    expect(await redis.exists(...keys)).toBe(0);
    await consumer.close();
  });

  it('retries a failing job with exponential backoff, then moves it to the dead letters', async () => {
    const attempts: Array<{ attempt: number; at: number; maxAttempts: number }> = [];
    const consumer = queue.consume(
      'retry',
      (_payload, job) => {
        attempts.push({ attempt: job.attempt, at: performance.now(), maxAttempts: job.maxAttempts });
        throw new Error(`boom ${job.attempt}`);
      },
      { maxAttempts: 3 },
    );
    const id = await queue.schedule('retry', { n: 1 });
    await waitFor(async () => (await queue.stats('retry')).dead === 1, 10_000, 'the job to die');
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
    expect(attempts.every((a) => a.maxAttempts === 3)).toBe(true);
    // backoff 100 ms then 200 ms (jitter 0), measured loosely.
    expect(attempts[1].at - attempts[0].at).toBeGreaterThanOrEqual(90);
    expect(attempts[2].at - attempts[1].at).toBeGreaterThanOrEqual(190);

    const [dead] = await queue.deadLetters('retry');
    expect(dead).toMatchObject({ id, state: 'dead', attempts: 3, payload: { n: 1 } });
    expect(dead.lastError).toMatch(/Error: boom 3/);
    expect(dead.diedAt).toBeInstanceOf(Date);
    expect((await queue.get('retry', id))?.state).toBe('dead');
    // Scheduling the same id while it is dead keeps the dead letter (de-duplication).
    await queue.schedule('retry', { n: 2 }, { id });
    expect((await queue.get('retry', id))?.state).toBe('dead');
    await consumer.close();

    const again = deferred<JobContext>();
    const second = queue.consume('retry', (_p, job) => again.resolve(job));
    expect(await queue.retryDead('retry', id)).toBe(1);
    expect((await again.promise).attempt).toBe(1);
    await second.close();
  });

  it("follows a job's own maxAttempts and succeeds on a later attempt", async () => {
    const seen: number[] = [];
    const consumer = queue.consume(
      'flaky',
      (_payload, job) => {
        seen.push(job.attempt);
        if (job.attempt < 2) throw new Error('first try fails');
      },
      { maxAttempts: 1 },
    );
    const id = await queue.schedule('flaky', 1, { maxAttempts: 2, backoff: { delay: 10 } });
    await waitFor(() => seen.length === 2, 10_000, 'the second attempt');
    await waitFor(async () => (await queue.get('flaky', id)) === null, 5_000, 'the acknowledgement');
    expect(seen).toEqual([1, 2]);
    expect((await queue.stats('flaky')).dead).toBe(0);
    await consumer.close();
  });

  it('requeues every dead letter of a topic with retryDead(topic)', async () => {
    const failing = queue.consume(
      'redo',
      () => {
        throw new Error('no');
      },
      { maxAttempts: 1 },
    );
    await queue.scheduleMany('redo', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    await waitFor(async () => (await queue.stats('redo')).dead === 3, 10_000, 'three dead letters');
    await failing.close();
    expect(await queue.retryDead('redo')).toBe(3);
    expect(await queue.stats('redo')).toMatchObject({ due: 3, dead: 0 });
    const payloads: number[] = [];
    const fixed = queue.consume<number>('redo', (p) => {
      payloads.push(p);
    });
    await waitFor(() => payloads.length === 3, 10_000, 'the requeued jobs');
    expect(payloads.sort()).toEqual([1, 2, 3]);
    await fixed.close();
  });

  it('refuses a second consumer of a topic and options out of range', async () => {
    const consumer = queue.consume('single', () => undefined);
    expect(() => queue.consume('single', () => undefined)).toThrow(DuplicateDelayedHandlerError);
    expect(() => queue.consume('bad-options', () => undefined, { concurrency: 0 })).toThrow(InvalidOptionsError);
    expect(() => queue.consume('bad-options', () => undefined, { visibilityTimeout: -1 })).toThrow(/visibilityTimeout/);
    expect(() => queue.consume('bad-options', () => undefined, { backoff: { jitter: 2 } })).toThrow(/backoff\.jitter/);
    await consumer.close();
    // Once closed, the topic can be consumed again.
    await queue.consume('single', () => undefined).close();
  });

  it('parks a job body it cannot read with the dead letters and keeps serving the topic', async () => {
    const topicKeys = (name: string) => `${t.keyPrefix}:dq:{foreign}:${name}`;
    await redis.hset(topicKeys('jobs'), 'garbage', 'not a job body');
    await redis.zadd(topicKeys('due'), 0, 'garbage');
    const seen: unknown[] = [];
    const consumer = queue.consume('foreign', (payload) => {
      seen.push(payload);
    });
    await queue.schedule('foreign', 'good');
    await waitFor(() => seen.length === 1, 5_000, 'the readable job');
    expect(seen).toEqual(['good']);
    const [dead] = await queue.deadLetters('foreign');
    expect(dead).toMatchObject({ id: 'garbage', payload: 'not a job body' });
    expect(dead.lastError).toMatch(/Unreadable job body/);
    await consumer.close();
  });

  it('refuses new work once the application has shut down', async () => {
    const closing = await createDelayApp();
    await closing.close();
    expect(() => closing.queue.consume('late', () => undefined)).toThrow(DelayQueueClosedError);
    await expect(closing.queue.schedule('late', 1)).rejects.toBeInstanceOf(DelayQueueClosedError);
  });

  it('handles synchronous throws, non-Error throws and handlers that return nothing', async () => {
    const attempts: number[] = [];
    const consumer = queue.consume(
      'odd',
      (payload: string, job) => {
        attempts.push(job.attempt);
        if (payload === 'string' && job.attempt === 1) throw 'a plain string';
        if (payload === 'sync' && job.attempt === 1) throw new TypeError('sync');
      },
      { backoff: { delay: 10 } },
    );
    await queue.scheduleMany('odd', [{ payload: 'string' }, { payload: 'sync' }, { payload: 'fine' }]);
    await waitFor(() => attempts.length === 5, 10_000, 'two retries and three first attempts');
    await waitFor(async () => (await queue.stats('odd')).active === 0, 5_000, 'acknowledgements');
    expect(await queue.stats('odd')).toEqual(topicStats());
    await consumer.close();
  });
});
