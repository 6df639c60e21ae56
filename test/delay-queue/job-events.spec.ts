import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { InvalidOptionsError, type JobContext } from '../../lib/index.js';
import {
  INSTANCE,
  listenerCalls,
  OrderEventRecorder,
  orders,
  ThrowingListeners,
  UnknownEventListener,
} from '../fixtures/job-event-listeners.js';
import { uniquePrefix } from '../support/test-app.js';
import { deferred, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';

/**
 * `@OnJobEvent(topic, event)`: each outcome of a job calls the listeners of the instance where it
 * happened, once, with `this` the provider; a listener that throws or rejects is logged once and
 * changes nothing for the job or the other listeners. Three instances share one queue here, with the
 * same listeners, as processes of one service would: A and B consume the topic, C only schedules.
 */

/** One handler run: which job, which attempt, on which instance. */
interface Run {
  readonly id: string;
  readonly attempt: number;
  readonly instance: string;
}

failOnUnhandledRejections();

describe('@OnJobEvent across two instances', () => {
  const runs: Run[] = [];
  const apps: DelayTestApp[] = [];
  const cancelWaiting = deferred<string>();
  let errors: jest.SpiedFunction<Logger['error']>;

  /** The listener errors logged, as their messages. */
  const listenerErrors = () => errors.mock.calls.map(([message]) => String(message)).filter((m) => m.startsWith('@OnJobEvent'));
  const calls = (event: string) => listenerCalls.filter((call) => call.event === event);

  beforeAll(async () => {
    errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const keyPrefix = uniquePrefix('job-events');
    for (const instance of ['A', 'B', 'C']) {
      const t = await createDelayApp({ keyPrefix }, [OrderEventRecorder, ThrowingListeners, { provide: INSTANCE, useValue: instance }]);
      apps.push(t);
      if (instance === 'C') continue;
      t.queue.consume(
        orders,
        async ({ n }, job: JobContext) => {
          runs.push({ id: job.id, attempt: job.attempt, instance });
          if (n < 0) throw new Error(`n is negative: ${n}`);
          if (n === 0) {
            cancelWaiting.resolve(job.id);
            await new Promise((resolve) => job.signal.addEventListener('abort', resolve, { once: true }));
            return { doubled: 0 };
          }
          await job.progress({ n });
          return { doubled: n * 2 };
        },
        { concurrency: 4 },
      );
    }
  });

  afterAll(async () => {
    await Promise.all(apps.map((t) => t.close()));
    jest.restoreAllMocks();
  });

  it('calls each outcome listener once, on the instance where the outcome happened, with its typed payload', async () => {
    const [a, b, c] = apps;
    const ids = [
      ...(await b.queue.scheduleMany(
        orders,
        [1, 2, 3].map((n) => ({ payload: { n } })),
      )),
      // The plain name is the same topic: its jobs reach the token's consumer and listeners.
      ...(await a.queue.scheduleMany(
        'events.orders',
        [4, 5, 6].map((n) => ({ payload: { n } })),
      )),
    ];
    const failing = await c.queue.schedule(orders, { n: -1 }, { maxAttempts: 2, backoff: { delay: 10, jitter: 0 } });
    const cancelled = await a.queue.schedule(orders, { n: 0 });

    expect(await cancelWaiting.promise).toBe(cancelled);
    expect(await c.queue.cancel(orders, cancelled)).toBe(true);
    await waitFor(
      () => calls('completed').length === ids.length && calls('dead').length === 1 && calls('cancelled').length === 1,
      20_000,
      'every outcome reported',
    );

    const ranOn = (id: string, attempt = 1) => runs.filter((run) => run.id === id && run.attempt === attempt).map((run) => run.instance);
    for (const [i, id] of ids.entries()) {
      // Neither the throwing listeners nor anything else retried the job: it ran once.
      expect(runs.filter((run) => run.id === id)).toHaveLength(1);
      const completed = calls('completed').filter((call) => call.payload.id === id);
      expect(completed.map((call) => call.instance)).toEqual(ranOn(id));
      expect(completed[0]).toMatchObject({ self: true, payload: { topic: 'events.orders', attempt: 1, result: { doubled: (i + 1) * 2 } } });
      const progress = calls('progress').filter((call) => call.payload.id === id);
      expect(progress.map((call) => [call.instance, call.payload.progress])).toEqual([[ranOn(id)[0], { n: i + 1 }]]);
    }
    const failed = calls('failed').filter((call) => call.payload.id === failing);
    expect(failed.map((call) => [call.payload.attempt, call.instance])).toEqual([
      [1, ranOn(failing, 1)[0]],
      [2, ranOn(failing, 2)[0]],
    ]);
    expect(calls('dead').map((call) => [call.payload.id, call.instance, call.payload.error])).toEqual([
      [failing, ranOn(failing, 2)[0], 'Error: n is negative: -1'],
    ]);
    expect(calls('cancelled').map((call) => [call.payload.id, call.instance])).toEqual([[cancelled, ranOn(cancelled)[0]]]);
    expect(calls('completed').filter((call) => call.payload.id === cancelled)).toEqual([]);
    // C ran nothing, so nothing happened there: its listeners heard nothing, though it scheduled and cancelled.
    expect(listenerCalls.filter((call) => call.instance === 'C')).toEqual([]);
  });

  it('logs a listener that throws or rejects once per outcome, naming topic, event and job, and nothing else changes', async () => {
    const completedIds = calls('completed').map((call) => call.payload.id);
    // The async listener's rejection is logged once it settles.
    await waitFor(() => listenerErrors().length === 2 * completedIds.length, 10_000, 'both listeners of every completion logged');
    for (const id of completedIds) {
      const logged = listenerErrors().filter((message) => message.includes(`job ${JSON.stringify(id)} `));
      expect(logged).toHaveLength(2);
      expect(logged.join('\n')).toContain('@OnJobEvent on ThrowingListeners.throwsAtOnce threw on the "completed" event');
      expect(logged.join('\n')).toContain('@OnJobEvent on ThrowingListeners.rejects threw on the "completed" event');
      expect(logged.join('\n')).toContain('of topic "events.orders"; the job is not affected: the');
    }
    // The jobs completed: once their acknowledgements are in, nothing waits or runs, and only the job meant to died.
    const stats = await waitFor(
      async () => {
        const now = await apps[0].queue.stats(orders);
        return now.active === 0 && now;
      },
      10_000,
      'the acknowledgements recorded',
    );
    expect(stats).toMatchObject({ scheduled: 0, due: 0, active: 0, dead: 1 });
  });
});

describe('@OnJobEvent at bootstrap', () => {
  it('refuses an event name that is not one of completed, failed, dead, cancelled, progress', async () => {
    const error = await createDelayApp({}, [UnknownEventListener]).then(
      (t) => t.close().then(() => undefined),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as Error).message).toContain('@OnJobEvent on UnknownEventListener.finished');
    expect((error as Error).message).toContain('"finished" is not one of completed, failed, dead, cancelled, progress');
  });
});
