import {
  DelayQueueClosedError,
  InvalidJobError,
  InvalidOptionsError,
  JobCancelledError,
  JobDeadError,
  JobNotFoundError,
  JobWaitTimeoutError,
  type DelayQueueService,
} from '../../lib/index.js';
import { JobWaiters } from '../../lib/delay-queue/job-waiters.js';
import { rejectionOf } from '../support/thrown.js';
import { waitFor } from '../support/timing.js';
import { useDelayInstances } from './support/delay-instances.js';
import type { DelayTestApp } from './support/delay-test-app.js';

/** A promise settled from outside: a handler waits on it until the spec has its waiter in place. */
function gate(): { readonly opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * `waitFor(topic, id)`: one instance waits, another runs the job. Each wait is checked to be in place
 * (its id recorded in the shard's waited hash) before the job is let go, so no spec depends on timing.
 */
describe('DelayQueueService.waitFor', () => {
  const instances = useDelayInstances('wait-for');
  let waiting: DelayTestApp;
  let running: DelayTestApp;
  let queue: DelayQueueService;
  beforeAll(async () => {
    [waiting, running] = await instances.start(2, { delayQueue: { backoff: { delay: 10, factor: 1, jitter: 0 } } });
    queue = waiting.queue;
  });
  const keyOf = (topic: string, part: string) => `${waiting.keyPrefix}:dq:{${topic}}:${part}`;
  /** Resolves once a waiter recorded that it waits for the job (watch-job.lua.ts ran). */
  const waiterInPlace = (topic: string, id: string) =>
    waitFor(async () => (await instances.redis().hexists(keyOf(topic, 'waited'), id)) === 1, 10_000, `a waiter of ${id}`);

  it('resolves with the result of a job completed on another instance (keepCompleted)', async () => {
    const go = gate();
    const consumer = running.queue.consume<number>(
      'kept',
      async (n) => {
        await go.opened;
        return { doubled: n * 2 };
      },
      { keepCompleted: { count: 10 } },
    );
    // An id of any characters: the notice counts its length in bytes.
    const id = await queue.schedule('kept', 21, { id: 'faktura:żółw🙂' });
    const result = queue.waitFor('kept', id);
    await waiterInPlace('kept', id);
    go.open();
    expect(await result).toEqual({ doubled: 42 });
    // The outcome was announced once: the entry went with it.
    expect(await instances.redis().hexists(keyOf('kept', 'waited'), id)).toBe(0);
    // Completed and kept: a later wait answers at once from the kept result.
    expect(await queue.waitFor('kept', id)).toEqual({ doubled: 42 });
    await consumer.close();
  });

  it('resolves with undefined for a job whose consumer keeps no result; a later wait finds no job', async () => {
    const go = gate();
    const consumer = running.queue.consume('plain', async () => {
      await go.opened;
      return 'not kept';
    });
    const id = await queue.schedule('plain', null);
    const result = queue.waitFor('plain', id);
    await waiterInPlace('plain', id);
    go.open();
    expect(await result).toBeUndefined();
    const late = await rejectionOf(() => queue.waitFor('plain', id));
    expect(late).toBeInstanceOf(JobNotFoundError);
    expect(late).toMatchObject({ code: 'JOB_NOT_FOUND', topic: 'plain', jobId: id });
    await consumer.close();
  });

  it('rejects with JobDeadError carrying the last error once the job is dead letters', async () => {
    const go = gate();
    const consumer = running.queue.consume('dying', async () => {
      await go.opened;
      throw new Error('card declined');
    });
    const id = await queue.schedule('dying', null, { maxAttempts: 2 });
    const result = rejectionOf(() => queue.waitFor('dying', id));
    await waiterInPlace('dying', id);
    go.open();
    const error = await result;
    expect(error).toBeInstanceOf(JobDeadError);
    expect(error).toMatchObject({ code: 'JOB_DEAD', topic: 'dying', jobId: id, lastError: 'Error: card declined' });
    expect((await queue.get('dying', id))?.attempts).toBe(2);
    // Already dead: a later wait rejects at once the same way.
    expect(await rejectionOf(() => queue.waitFor('dying', id))).toMatchObject({ code: 'JOB_DEAD', lastError: 'Error: card declined' });
    await consumer.close();
  });

  it('rejects with JobCancelledError when the job is cancelled, running or waiting', async () => {
    const waitingId = await queue.schedule('cancelled', null, { delay: 60_000 });
    const waited = rejectionOf(() => queue.waitFor('cancelled', waitingId));
    await waiterInPlace('cancelled', waitingId);
    expect(await running.queue.cancel('cancelled', waitingId)).toBe(true);
    const error = await waited;
    expect(error).toBeInstanceOf(JobCancelledError);
    expect(error).toMatchObject({ jobId: waitingId, whileWaited: true });

    const started = gate();
    const consumer = running.queue.consume('cancelled-running', async (_, job) => {
      started.open();
      await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
    });
    const runningId = await queue.schedule('cancelled-running', null);
    const ran = rejectionOf(() => queue.waitFor('cancelled-running', runningId));
    await waiterInPlace('cancelled-running', runningId);
    await started.opened;
    expect(await queue.cancel('cancelled-running', runningId)).toBe(true);
    expect(await ran).toBeInstanceOf(JobCancelledError);
    await consumer.close();
  });

  it('rejects with JobWaitTimeoutError after its timeout and leaves the job as it was', async () => {
    const id = await queue.schedule('slow', { n: 1 }, { delay: 60_000 });
    const error = await rejectionOf(() => queue.waitFor('slow', id, { timeout: 50 }));
    expect(error).toBeInstanceOf(JobWaitTimeoutError);
    expect(error).toMatchObject({ code: 'JOB_WAIT_TIMEOUT', topic: 'slow', jobId: id, timeout: 50 });
    expect(await queue.get('slow', id)).toMatchObject({ state: 'scheduled', payload: { n: 1 } });
    expect(waiting.app.get(JobWaiters).pending).toBe(0);
    await queue.cancel('slow', id);
  });

  it('rejects an unknown id with JobNotFoundError and bad input with typed errors, writing nothing', async () => {
    expect(await rejectionOf(() => queue.waitFor('nothing', 'never-scheduled'))).toBeInstanceOf(JobNotFoundError);
    expect(await instances.redis().exists(keyOf('nothing', 'waited'))).toBe(0);
    await expect(queue.waitFor('nothing', '')).rejects.toThrow(InvalidJobError);
    await expect(queue.waitFor('nothing', 'x', { timeout: -1 })).rejects.toThrow(InvalidOptionsError);
    await expect(queue.waitFor('nothing', 'x', { timeot: 5 } as never)).rejects.toThrow(InvalidOptionsError);
  });

  it('shares one subscription per topic among all the waiters of a process', async () => {
    const go = gate();
    const consumer = running.queue.consume<number>(
      'many',
      async (n) => {
        await go.opened;
        return n;
      },
      { keepCompleted: { count: 1000 }, concurrency: 50 },
    );
    const ids = await queue.scheduleMany(
      'many',
      Array.from({ length: 100 }, (_, n) => ({ payload: n })),
    );
    const results = Promise.all(ids.flatMap((id) => [queue.waitFor('many', id), running.queue.waitFor('many', id)]));
    const subscribers = async () => Number(((await instances.redis().pubsub('NUMSUB', keyOf('many', 'outcomes'))) as [string, number])[1]);
    await waitFor(
      async () => (await subscribers()) >= 2 && (await instances.redis().hlen(keyOf('many', 'waited'))) === 100,
      10_000,
      'every waiter in place',
    );
    // One subscriber per process, whatever its number of waiters (100 each here).
    expect(await subscribers()).toBe(2);
    expect([waiting, running].map((t) => t.app.get(JobWaiters).pending)).toEqual([100, 100]);
    go.open();
    expect(await results).toEqual(Array.from({ length: 100 }, (_, n) => [n, n]).flat());
    await waitFor(async () => (await subscribers()) === 0, 10_000, 'the channel to be left once no one waits');
    await consumer.close();
  });

  it('writes nothing for jobs no one waits for', async () => {
    const consumer = running.queue.consume('unwatched', () => 1, { keepCompleted: { count: 10 } });
    const id = await queue.schedule('unwatched', null);
    await waitFor(async () => (await queue.get('unwatched', id))?.state === 'completed', 10_000, 'the job to complete');
    expect(await instances.redis().exists(keyOf('unwatched', 'waited'))).toBe(0);
    await consumer.close();
  });

  it('reads the job again after its subscriber reconnects, so a notice lost meanwhile leaves no waiter hanging', async () => {
    const go = gate();
    const consumer = running.queue.consume(
      'lost-notice',
      async () => {
        await go.opened;
        return 'done';
      },
      { keepCompleted: { count: 10 } },
    );
    const id = await queue.schedule('lost-notice', null);
    const result = queue.waitFor('lost-notice', id);
    await waiterInPlace('lost-notice', id);
    // The notice is lost: its announcement finds no entry (as one published while the subscriber was down).
    await instances.redis().hdel(keyOf('lost-notice', 'waited'), id);
    go.open();
    await waitFor(async () => (await queue.get('lost-notice', id))?.state === 'completed', 10_000, 'the job to complete');
    // Drop this process's outcome subscriber as a network failure would (it reconnects by itself).
    const waiters = waiting.app.get(JobWaiters) as unknown as { subscriber: { client: { stream: { destroy(): void } } } };
    waiters.subscriber.client.stream.destroy();
    expect(await result).toBe('done');
    await consumer.close();
  });

  it('rejects the waits still pending with DelayQueueClosedError when the application shuts down', async () => {
    const [alone] = await instances.start(1);
    const id = await alone.queue.schedule('shutdown', null, { delay: 60_000 });
    const result = rejectionOf(() => alone.queue.waitFor('shutdown', id));
    await waitFor(
      async () => (await instances.redis().hexists(`${alone.keyPrefix}:dq:{shutdown}:waited`, id)) === 1,
      10_000,
      'the waiter in place',
    );
    await alone.close();
    expect(await result).toBeInstanceOf(DelayQueueClosedError);
    expect(await rejectionOf(() => alone.queue.waitFor('shutdown', id))).toBeInstanceOf(DelayQueueClosedError);
  });
});
