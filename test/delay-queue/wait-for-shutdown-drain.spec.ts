import { DelayQueueClosedError, JobDeadError, UnrecoverableJobError } from '../../lib/index.js';
import { JobWaiters } from '../../lib/delay-queue/job-waiters.js';
import { startLocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { rawRedis } from '../support/test-app.js';
import { deferred, waitFor } from '../support/timing.js';
import { createDelayApp } from './support/delay-test-app.js';
import { useDelayInstances } from './support/delay-instances.js';

const SHUTDOWN_TIMEOUT = 1_000;

/** The value a wait settled with, or its error's class name, so one `toEqual` shows every waiter. */
const outcomeOf = (wait: Promise<unknown>): Promise<unknown> =>
  wait.then(
    (value) => ({ value }),
    (error: unknown) => ({ error: error instanceof Error ? error.constructor.name : String(error) }),
  );

/**
 * `waitFor()` and the application's shutdown: the jobs this application's consumers finish while
 * they drain settle their waiters in the same application with their outcome (the notice travels on
 * the subscriber connection, which may deliver it after the acknowledgement's reply); the waits whose
 * job does not finish then reject with DelayQueueClosedError. Each handler is held until the drain
 * has begun, so the outcome is written during the drain, whatever the machine's speed.
 */
describe('waitFor across the shutdown drain', () => {
  const instances = useDelayInstances('wait-drain');

  it('settles the waiters of jobs finished during the drain with their outcome, and closes the others', async () => {
    const [app] = await instances.start(1);
    const keys = (topic: string) => `${app.keyPrefix}:dq:{${topic}}:waited`;
    const drainBegun = deferred();
    const handlers = { kept: 0, dead: 0 };
    const kept = app.queue.consume<number>(
      'drain.kept',
      async (n) => {
        handlers.kept++;
        await drainBegun.promise;
        return { n };
      },
      { keepCompleted: { count: 10 }, concurrency: 4 },
    );
    const dead = app.queue.consume('drain.dead', async () => {
      handlers.dead++;
      await drainBegun.promise;
      throw new UnrecoverableJobError('refused while draining');
    });
    const keptIds = await Promise.all([1, 2, 3, 4].map((n) => app.queue.schedule('drain.kept', n)));
    const deadId = await app.queue.schedule('drain.dead', null);
    const laterId = await app.queue.schedule('drain.kept', 5, { delay: 60_000 });
    const waits = {
      kept: keptIds.map((id) => outcomeOf(app.queue.waitFor('drain.kept', id))),
      dead: outcomeOf(app.queue.waitFor('drain.dead', deadId)),
      later: outcomeOf(app.queue.waitFor('drain.kept', laterId)),
    };
    await waitFor(() => handlers.kept === 4 && handlers.dead === 1, 10_000, 'every handler to start');
    await waitFor(
      async () => (await instances.redis().hlen(keys('drain.kept'))) === 5 && (await instances.redis().hlen(keys('drain.dead'))) === 1,
      10_000,
      'every waiter in place',
    );

    const closing = app.close();
    await waitFor(() => !kept.running && !dead.running, 10_000, 'the drain to begin');
    drainBegun.resolve();
    await closing;

    expect(await Promise.all(waits.kept)).toEqual([1, 2, 3, 4].map((n) => ({ value: { n } })));
    expect(await waits.dead).toEqual({ error: JobDeadError.name });
    expect(await waits.later).toEqual({ error: DelayQueueClosedError.name });
    expect(app.app.get(JobWaiters).pending).toBe(0);
    const [reader] = await instances.start(1, { keyPrefix: app.keyPrefix });
    expect(await reader.queue.get('drain.kept', keptIds[0])).toMatchObject({ state: 'completed', result: { n: 1 } });
    expect(await reader.queue.get('drain.dead', deadId)).toMatchObject({ state: 'dead' });
  });

  it('keeps the shutdown bounded with waiters pending while Redis is paused: close() within shutdownTimeout + 2 s', async () => {
    const server = await startLocalRedisServer();
    try {
      const app = await createDelayApp({ redis: server.url, delayQueue: { shutdownTimeout: SHUTDOWN_TIMEOUT } });
      const started = deferred();
      app.queue.consume('paused.jobs', async () => {
        started.resolve();
        await new Promise<never>(() => undefined);
      });
      const runningId = await app.queue.schedule('paused.jobs', 1);
      const laterId = await app.queue.schedule('paused.jobs', 2, { delay: 60_000 });
      const waits = [outcomeOf(app.queue.waitFor('paused.jobs', runningId)), outcomeOf(app.queue.waitFor('paused.jobs', laterId))];
      await started.promise;
      const raw = rawRedis(server.url);
      try {
        await waitFor(async () => (await raw.hlen(`${app.keyPrefix}:dq:{paused.jobs}:waited`)) === 2, 10_000, 'both waiters in place');
      } finally {
        raw.disconnect();
      }
      server.process.kill('SIGSTOP');
      const startedAt = performance.now();
      try {
        await app.close();
        expect(performance.now() - startedAt).toBeLessThan(SHUTDOWN_TIMEOUT + 2_000);
      } finally {
        server.process.kill('SIGCONT');
      }
      expect(await Promise.all(waits)).toEqual([{ error: DelayQueueClosedError.name }, { error: DelayQueueClosedError.name }]);
    } finally {
      await server.stop();
    }
  });
});
