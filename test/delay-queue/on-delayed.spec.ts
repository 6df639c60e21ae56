import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { ConsumerShutdownTimeoutError, InvalidOptionsError, InvalidTopicError } from '../../lib/index.js';
import { DuplicateDelayedHandlerError } from '../../lib/core/errors/duplicate-delayed-handler.error.js';
import {
  BadOptionsHandler,
  BadTopicHandler,
  delayLog,
  ReminderHandlers,
  RequestScopedHandler,
  SecondReminderHandler,
  SlowHandler,
  slowHandlerControl,
} from '../fixtures/delay-handlers.js';
import { uniquePrefix } from '../support/test-app.js';
import { createDelayApp } from './support/delay-test-app.js';
import { sleep, waitFor } from '../support/timing.js';
import { topicStats } from '../support/topic-stats.js';

describe('@OnDelayed', () => {
  beforeEach(() => delayLog.reset());

  it('finds decorated methods at bootstrap and calls them with (payload, job) on their provider', async () => {
    const t = await createDelayApp({}, [ReminderHandlers]);
    try {
      const [scheduledAtMin] = [Date.now()];
      const id = await t.queue.schedule('reminder.send', { to: 'ana' }, { delay: 50, id: 'r1' });
      await t.queue.schedule('audit.a', 'A');
      await t.queue.schedule('audit.b', 'B');
      await waitFor(() => delayLog.calls.length === 3, 5_000, 'three handler calls');
      const send = delayLog.calls.find((c) => c.handler === 'send')!;
      expect(send.payload).toEqual({ to: 'ana' });
      expect(send.self).toBeInstanceOf(ReminderHandlers);
      expect(send.job).toMatchObject({ id, topic: 'reminder.send', attempt: 1 });
      expect(send.job.scheduledAt.getTime()).toBeGreaterThanOrEqual(scheduledAtMin);
      expect(send.job.signal).toBeInstanceOf(AbortSignal);
      expect(Object.isFrozen(send.job)).toBe(true);
      expect(
        delayLog.calls
          .filter((c) => c.handler === 'audit')
          .map((c) => [c.topic, c.payload])
          .sort(),
      ).toEqual([
        ['audit.a', 'A'],
        ['audit.b', 'B'],
      ]);
    } finally {
      await t.close();
    }
  });

  it('fails bootstrap when two handlers claim one topic, naming both', async () => {
    const error = await createDelayApp({}, [ReminderHandlers, SecondReminderHandler]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DuplicateDelayedHandlerError);
    expect((error as Error).message).toMatch(/ReminderHandlers\.send.*SecondReminderHandler\.send/);
  });

  it('fails bootstrap on a topic name that is not valid, naming the method', async () => {
    const error = await createDelayApp({}, [BadTopicHandler]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidTopicError);
    expect((error as Error).message).toMatch(/BadTopicHandler\.handle/);
  });

  it('fails bootstrap on consumer options out of range, naming the method', async () => {
    const error = await createDelayApp({}, [BadOptionsHandler]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as Error).message).toMatch(/concurrency.*BadOptionsHandler\.handle/);
  });

  it('warns about a handler on a request-scoped provider and does not run it', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const t = await createDelayApp({}, [RequestScopedHandler]);
      await t.close();
      const messages = warn.mock.calls.map((args) => String(args[0]));
      expect(messages.some((m) => /RequestScopedHandler\.handle.*NOT run.*request-scoped/.test(m))).toBe(true);
    } finally {
      warn.mockRestore();
    }
  });

  describe('graceful shutdown', () => {
    beforeEach(() => slowHandlerControl.reset());

    it('stops claiming, waits for running handlers, and acknowledges them before the connections close', async () => {
      const keyPrefix = uniquePrefix('dq');
      const t = await createDelayApp({ keyPrefix }, [SlowHandler]);
      await t.queue.scheduleMany(
        'slow.work',
        Array.from({ length: 6 }, (_, i) => ({ payload: i })),
      );
      await waitFor(() => slowHandlerControl.started === 4, 5_000, 'four handlers to start');
      const closing = t.close();
      await sleep(200);
      expect(slowHandlerControl.finished).toBe(0); // still waiting for them
      slowHandlerControl.open();
      await closing;
      expect(slowHandlerControl.finished).toBe(4);
      expect(slowHandlerControl.started).toBe(4); // nothing claimed after shutdown began

      const observer = await createDelayApp({ keyPrefix });
      expect(await observer.queue.stats('slow.work')).toEqual(topicStats({ due: 2 }));
      await observer.close();
    });

    it('after shutdownTimeout aborts the handlers still running and hands their jobs back', async () => {
      const keyPrefix = uniquePrefix('dq');
      const t = await createDelayApp({ keyPrefix, delayQueue: { shutdownTimeout: 300 } }, [SlowHandler]);
      await t.queue.scheduleMany('slow.work', [
        { payload: 1, id: 'stuck-1' },
        { payload: 2, id: 'stuck-2' },
      ]);
      await waitFor(() => slowHandlerControl.started === 2, 5_000, 'two handlers to start');
      const started = performance.now();
      await t.close();
      const took = performance.now() - started;
      expect(took).toBeGreaterThanOrEqual(250);
      expect(took).toBeLessThan(3_000);
      for (const signal of slowHandlerControl.signals) {
        expect(signal.aborted).toBe(true);
        expect(signal.reason).toBeInstanceOf(ConsumerShutdownTimeoutError);
      }
      slowHandlerControl.open();

      // Handed back at once (not after the 30 s visibility timeout), attempt kept.
      const observer = await createDelayApp({ keyPrefix });
      expect(await observer.queue.stats('slow.work')).toEqual(topicStats({ due: 2 }));
      expect((await observer.queue.get('slow.work', 'stuck-1'))?.attempts).toBe(1);
      const attempts: number[] = [];
      observer.queue.consume('slow.work', (_p, job) => {
        attempts.push(job.attempt);
      });
      await waitFor(() => attempts.length === 2, 5_000, 'the handed-back jobs to run again');
      expect(attempts).toEqual([2, 2]);
      await observer.close();
    });
  });
});
