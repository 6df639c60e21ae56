import { RedisConnectionError, RedisLockEvents, type JobLogDroppedEvent } from '../../lib/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { uniquePrefix } from '../support/test-app.js';
import { rejectionOf } from '../support/thrown.js';
import { deferred, waitFor } from '../support/timing.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';

failOnUnhandledRejections();

/**
 * `job.log()` while Redis is down: it neither throws nor waits, the handler and its job go on, and
 * the lines written before and after the outage are in the log in order (a batch Redis did not take
 * is dropped, reported by `job.log.dropped`).
 */
describe('Job logs while Redis is down', () => {
  let server: LocalRedisServer;
  let t: DelayTestApp;
  beforeAll(async () => {
    muteNestLogger('error', 'warn');
    server = await startLocalRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
    t = await createDelayApp({ redis: server.url, keyPrefix: uniquePrefix('logs-outage') });
  });
  afterAll(async () => {
    await t?.close();
    await server?.stop();
  });

  it('never throws into the handler; the job completes after the outage with the lines around it in order', async () => {
    const started = deferred();
    const outage = deferred();
    const back = deferred();
    const thrown: unknown[] = [];
    const dropped: JobLogDroppedEvent[] = [];
    t.app.get(RedisLockEvents).on('job.log.dropped', (event) => dropped.push(event));
    const consumer = t.queue.consume(
      'outage',
      async (_payload, job) => {
        job.log('before');
        started.resolve();
        await outage.promise;
        try {
          job.log('during');
        } catch (error) {
          thrown.push(error);
        }
        await back.promise;
        job.log('after');
        return 'done';
      },
      { keepCompleted: { count: 10 }, visibilityTimeout: 60_000 },
    );
    const id = await t.queue.schedule('outage', null);
    await started.promise;
    await waitFor(async () => (await t.queue.logs('outage', id)).length === 1, 10_000, 'the first line');
    let bringBack!: () => void;
    const restarted = server.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
    expect(await rejectionOf(() => t.queue.logs('outage', id))).toBeInstanceOf(RedisConnectionError);
    outage.resolve();
    bringBack();
    await restarted;
    // Calls fail at once until the connection is back: the next line is logged once it is.
    await waitFor(async () => (await t.queue.logs('outage', id).catch(() => null)) !== null, 20_000, 'the connection back');
    back.resolve();
    const state = async () => (await t.queue.get('outage', id).catch(() => null))?.state;
    await waitFor(async () => (await state()) === 'completed', 20_000, 'the job to complete');
    expect(thrown).toEqual([]);
    const lines = await t.queue.logs('outage', id);
    // 'during' is in the log when its batch reached Redis once it was back, else dropped and reported:
    // never out of order, never silently lost.
    if (lines.includes('during')) {
      expect(lines).toEqual(['before', 'during', 'after']);
      expect(dropped).toEqual([]);
    } else {
      expect(lines).toEqual(['before', 'after']);
      expect(dropped).toEqual([{ topic: 'outage', id, lines: 1, error: expect.anything() }]);
    }
    await consumer.close();
  });
});
