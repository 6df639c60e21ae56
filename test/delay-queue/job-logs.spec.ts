import { jest } from '@jest/globals';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { InvalidJobError, type JobContext } from '../../lib/index.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { useRawRedis } from '../support/test-app.js';
import { deferred, waitFor } from '../support/timing.js';
import { completedJob } from './support/completed-job.js';
import { createDelayApp, useDelayApp, type DelayTestApp } from './support/delay-test-app.js';

failOnUnhandledRejections();

/**
 * `JobContext.log(message)` and `DelayQueueService.logs(topic, id)`: ordered lines, kept across
 * attempts and with the kept job, deleted with it, bounded, readable from any instance while the job
 * runs, and written only while the delivery holds its job (claim token checked in Redis).
 */
describe('Job logs', () => {
  beforeAll(() => muteNestLogger('warn', 'error')); // retries and dead letters on purpose
  afterAll(() => jest.restoreAllMocks());
  const t = useDelayApp({ delayQueue: { backoff: { delay: 20, jitter: 0 }, retention: { deadLetterMaxCount: 1 } } });
  const redis = useRawRedis();
  let other: DelayTestApp;
  beforeAll(async () => (other = await createDelayApp({ keyPrefix: t.keyPrefix })));
  afterAll(() => other.close());

  it('shows the lines logged on one instance to another while the job runs, in order, and keeps them with the completed job', async () => {
    const finish = deferred();
    const consumer = t.queue.consume(
      'report',
      async (_payload, job) => {
        job.log('first');
        job.log('second');
        await Promise.resolve();
        job.log('third');
        await finish.promise;
        job.log('last');
        return 'ok';
      },
      { keepCompleted: { count: 10 } },
    );
    await t.queue.schedule('report', null, { id: 'r1' });
    await waitFor(async () => (await other.queue.logs('report', 'r1')).length === 3, 5_000, 'the lines on the other instance');
    expect(await other.queue.logs('report', 'r1')).toEqual(['first', 'second', 'third']);
    finish.resolve();
    await completedJob(other.queue, 'report', 'r1');
    // Written before the acknowledgement: complete as soon as the job shows as completed.
    expect(await other.queue.logs('report', 'r1')).toEqual(['first', 'second', 'third', 'last']);
    await consumer.close();
  });

  it('appends the lines of a retry to those of the attempt before; a job that completes unkept takes its log with it', async () => {
    const seen: string[][] = [];
    const consumer = t.queue.consume('flaky', async (_payload, job) => {
      seen.push(await t.queue.logs('flaky', job.id));
      job.log(`attempt ${job.attempt}`);
      if (job.attempt < 3) throw new Error('fails');
    });
    await t.queue.schedule('flaky', null, { id: 'f1', maxAttempts: 3 });
    await waitFor(() => seen.length === 3, 5_000, 'three attempts');
    await waitFor(async () => (await t.queue.get('flaky', 'f1')) === null, 5_000, 'the acknowledgement');
    expect(seen).toEqual([[], ['attempt 1'], ['attempt 1', 'attempt 2']]);
    expect(await t.queue.logs('flaky', 'f1')).toEqual([]);
    expect(await redis.exists(`${new RedisKeySpace(t.keyPrefix).topic('flaky').logsPrefix}f1`)).toBe(0);
    await consumer.close();
  });

  it('keeps a dead job’s log, and deletes it when the dead letter is trimmed', async () => {
    const consumer = t.queue.consume('doomed', (_payload, job) => {
      job.log(`dying ${job.id}`);
      throw new Error('always fails');
    });
    await t.queue.schedule('doomed', null, { id: 'd1', maxAttempts: 1 });
    await waitFor(async () => (await t.queue.get('doomed', 'd1'))?.state === 'dead', 5_000, 'd1 dead');
    expect(await t.queue.logs('doomed', 'd1')).toEqual(['dying d1']);
    // deadLetterMaxCount 1: the next dead letter trims d1, its log with it.
    await t.queue.schedule('doomed', null, { id: 'd2', maxAttempts: 1 });
    await waitFor(async () => (await t.queue.get('doomed', 'd2'))?.state === 'dead', 5_000, 'd2 dead');
    expect(await t.queue.get('doomed', 'd1')).toBeNull();
    expect(await t.queue.logs('doomed', 'd1')).toEqual([]);
    expect(await t.queue.logs('doomed', 'd2')).toEqual(['dying d2']);
    await consumer.close();
  });

  it('deletes the log of a job replaced or cancelled while it runs; a delivery that lost its job writes nothing', async () => {
    const contexts = new Map<string, JobContext>();
    const release = deferred();
    const consumer = t.queue.consume<string>(
      'taken',
      async (version, job) => {
        contexts.set(version, job);
        job.log(`${version} started`);
        await release.promise;
      },
      { concurrency: 2 },
    );
    await t.queue.schedule('taken', 'old', { id: 'j' });
    await waitFor(async () => (await t.queue.logs('taken', 'j')).length === 1, 5_000, 'the first delivery’s line');
    await t.queue.schedule('taken', 'new', { id: 'j', replace: true });
    await waitFor(async () => (await t.queue.logs('taken', 'j')).length === 1 && contexts.has('new'), 5_000, 'the second delivery');
    await waitFor(async () => (await t.queue.logs('taken', 'j'))[0] === 'new started', 5_000, 'the second delivery’s line');
    contexts.get('old')!.log('stale line');
    contexts.get('new')!.log('fresh line');
    await waitFor(async () => (await t.queue.logs('taken', 'j')).length === 2, 5_000, 'the fresh line');
    expect(await t.queue.logs('taken', 'j')).toEqual(['new started', 'fresh line']);
    expect(await t.queue.cancel('taken', 'j')).toBe(true);
    expect(await t.queue.logs('taken', 'j')).toEqual([]);
    contexts.get('new')!.log('after cancel');
    release.resolve();
    await consumer.close(); // waits for the handlers, and for their lines to be sent or refused
    expect(await t.queue.logs('taken', 'j')).toEqual([]);
  });

  it('writes nothing from a delivery whose visibility passed and whose job another instance claimed', async () => {
    const keys = new RedisKeySpace(t.keyPrefix).topic('slow');
    const stale = deferred<JobContext>();
    const releaseFirst = deferred();
    const secondStarted = deferred();
    const releaseSecond = deferred();
    const first = t.queue.consume(
      'slow',
      async (_payload, job) => {
        job.log('first delivery');
        stale.resolve(job);
        await releaseFirst.promise;
        job.log('stale line');
      },
      { visibilityTimeout: 60_000, concurrency: 1 }, // no free slot: only the other instance claims the job back
    );
    await t.queue.schedule('slow', null, { id: 's' });
    await stale.promise;
    await waitFor(async () => (await t.queue.logs('slow', 's')).length === 1, 5_000, 'the first line');
    // The first delivery's visibility deadline passes (as after a pause): any consumer may take the job back.
    await redis.zadd(keys.active, 'XX', 0, 's');
    const second = other.queue.consume(
      'slow',
      async (_payload, next) => {
        next.log('second delivery');
        secondStarted.resolve();
        await releaseSecond.promise;
      },
      { keepCompleted: { count: 10 }, maxIdleWait: 100 },
    );
    await secondStarted.promise;
    releaseFirst.resolve();
    await first.close(); // the first handler returned and its lines were refused in Redis
    releaseSecond.resolve();
    await completedJob(t.queue, 'slow', 's');
    expect(await t.queue.logs('slow', 's')).toEqual(['first delivery', 'second delivery']);
    await second.close();
  });

  it('clean() and obliterate() delete the logs of the jobs they remove', async () => {
    const logsKey = (topic: string, id: string) => `${new RedisKeySpace(t.keyPrefix).topic(topic).logsPrefix}${id}`;
    const consumer = t.queue.consume('cleaned', (_payload, job) => job.log(`ran ${job.id}`), { keepCompleted: { count: 10 } });
    await t.queue.schedule('cleaned', null, { id: 'k1' });
    await completedJob(t.queue, 'cleaned', 'k1');
    expect(await t.queue.logs('cleaned', 'k1')).toEqual(['ran k1']);
    expect(await t.queue.clean('cleaned', { state: 'completed' })).toBe(1);
    expect(await redis.exists(logsKey('cleaned', 'k1'))).toBe(0);
    await t.queue.schedule('cleaned', null, { id: 'k2' });
    await completedJob(t.queue, 'cleaned', 'k2');
    await consumer.close();
    expect(await redis.exists(logsKey('cleaned', 'k2'))).toBe(1);
    await t.queue.obliterate('cleaned');
    expect(await redis.exists(logsKey('cleaned', 'k2'))).toBe(0);
  });

  it('keeps the last 1,000 lines, each cut to 2,000 characters, and refuses a message that is not a string', async () => {
    const errors: unknown[] = [];
    const consumer = t.queue.consume(
      'chatty',
      async (_payload, job) => {
        // Two batches at least: Redis trims the list (one batch alone is cut before it is sent).
        for (let i = 0; i < 600; i++) job.log(`line ${i}`);
        await new Promise((resolve) => setImmediate(resolve));
        for (let i = 600; i < 1_000; i++) job.log(`line ${i}`);
        job.log('x'.repeat(2_500));
        for (const bad of [42, null, { a: 1 }]) {
          try {
            job.log(bad as unknown as string);
          } catch (error) {
            errors.push(error);
          }
        }
      },
      { keepCompleted: { count: 10 } },
    );
    await t.queue.schedule('chatty', null, { id: 'c' });
    await completedJob(t.queue, 'chatty', 'c');
    const lines = await t.queue.logs('chatty', 'c');
    expect(lines).toHaveLength(1_000);
    expect(lines[0]).toBe('line 1');
    expect(lines[998]).toBe('line 999');
    expect(lines[999]).toBe('x'.repeat(2_000));
    expect(errors).toHaveLength(3);
    expect(errors.every((error) => error instanceof InvalidJobError && /log message.*string/.test(error.message))).toBe(true);
    await consumer.close();
  });
});
