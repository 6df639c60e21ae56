import { jest } from '@jest/globals';
import { LockAcquireTimeoutError, LockService, RedisLockEvents, type RedisLockEventMap, type RedisLockEventName } from '../../lib/index.js';
import { useDelayApp } from '../delay-queue/support/delay-test-app.js';
import { rawRedis, useLockApp } from '../support/test-app.js';
import { readThrough } from '../support/use-resource.js';
import { sleep, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { FAILED_TWICE_THEN_DEAD } from './support/job-event-sequences.js';

type Recorded = { [K in RedisLockEventName]: { name: K; event: RedisLockEventMap[K] } }[RedisLockEventName];

/** Records every event of `names` in order. */
function record(events: RedisLockEvents, names: RedisLockEventName[]): Recorded[] {
  const seen: Recorded[] = [];
  for (const name of names) events.on(name, ((event: never) => seen.push({ name, event } as Recorded)) as never);
  return seen;
}

const LOCK_EVENTS: RedisLockEventName[] = ['lock.acquired', 'lock.released', 'lock.lost', 'lock.timeout'];
const JOB_EVENTS: RedisLockEventName[] = ['job.scheduled', 'job.started', 'job.succeeded', 'job.failed', 'job.retried', 'job.dead'];

failOnUnhandledRejections();

describe('RedisLockEvents: lock life cycle', () => {
  beforeAll(() => muteNestLogger('warn', 'error'));
  const app = useLockApp();
  const locks = app.get(LockService);
  const events = app.get(RedisLockEvents);
  afterEach(() => {
    for (const name of LOCK_EVENTS) events.removeAllListeners(name);
  });
  afterAll(() => jest.restoreAllMocks());

  it('reports acquired then released, with the fencing token, wait and hold times', async () => {
    const seen = record(events, LOCK_EVENTS);
    const lock = await locks.acquire('order:1');
    await sleep(30);
    await lock.release();
    expect(seen.map((s) => s.name)).toEqual(['lock.acquired', 'lock.released']);
    const [acquired, released] = seen.map((s) => s.event) as [RedisLockEventMap['lock.acquired'], RedisLockEventMap['lock.released']];
    expect(acquired).toEqual({ key: 'order:1', fencingToken: lock.fencingToken, waitMs: expect.any(Number) });
    expect(acquired.waitMs).toBeGreaterThanOrEqual(0);
    expect(released).toEqual({ key: 'order:1', fencingToken: lock.fencingToken, holdMs: expect.any(Number) });
    expect(released.holdMs!).toBeGreaterThanOrEqual(25);
  });

  it('reports a wait that timed out, and the waiting time of a waiter that got the lock', async () => {
    const holder = await locks.acquire('order:2');
    const seen = record(events, LOCK_EVENTS);
    await expect(locks.acquire('order:2', { waitTimeout: 100 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    expect(await locks.tryAcquire('order:2')).toBeNull();
    setTimeout(() => void holder.release(), 150);
    const waiter = await locks.acquire('order:2', { waitTimeout: 5_000 });
    await waiter.release();

    expect(seen.map((s) => s.name)).toEqual(['lock.timeout', 'lock.timeout', 'lock.released', 'lock.acquired', 'lock.released']);
    const [timedOut, tried] = seen.map((s) => s.event) as Array<RedisLockEventMap['lock.timeout']>;
    expect(timedOut).toEqual({ key: 'order:2', waitTimeout: 100, waitMs: expect.any(Number) });
    expect(timedOut.waitMs).toBeGreaterThanOrEqual(95);
    expect(tried).toEqual({ key: 'order:2', waitTimeout: 0, waitMs: expect.any(Number) });
    // The holder was acquired before anyone listened: its hold time is unknown, not made up.
    expect((seen[2].event as RedisLockEventMap['lock.released']).holdMs).toBeUndefined();
    const acquired = seen[3].event as RedisLockEventMap['lock.acquired'];
    expect(acquired.fencingToken).toBe(waiter.fencingToken);
    expect(acquired.waitMs).toBeGreaterThanOrEqual(100);
  });

  it('reports each key of a multi-key lock, and semaphores and read/write locks by their name', async () => {
    const seen = record(events, ['lock.acquired', 'lock.released']);
    const both = await locks.acquire(['acct:b', 'acct:a']);
    await both.release();
    const permit = await locks.semaphore('pool', 2).acquire();
    await permit.release();
    const reader = await locks.readWrite('doc').read();
    await reader.release();
    expect(seen.filter((s) => s.name === 'lock.acquired').map((s) => s.event.key)).toEqual(['acct:a', 'acct:b', 'pool', 'doc']);
    expect(
      seen
        .filter((s) => s.name === 'lock.released')
        .map((s) => s.event.key)
        .sort(),
    ).toEqual(['acct:a', 'acct:b', 'doc', 'pool']);
  });

  it('reports a lost lease with its error and hold time', async () => {
    const seen = record(events, LOCK_EVENTS);
    const lock = await locks.acquire('order:3', { leaseTime: 200 });
    const redis = rawRedis();
    try {
      await redis.del(...(await redis.keys('*lock:{order:3}')));
    } finally {
      redis.disconnect();
    }
    await waitFor(() => seen.some((s) => s.name === 'lock.lost'), 5_000, 'lock.lost');
    const lost = seen.find((s) => s.name === 'lock.lost')!.event as RedisLockEventMap['lock.lost'];
    expect(lost.key).toBe('order:3');
    expect(lost.fencingToken).toBe(lock.fencingToken);
    expect(lost.error).toBe(lock.signal.reason);
    expect(lost.holdMs).toBeGreaterThan(0);
    await lock.release(); // idempotent after a loss, emits nothing more
    expect(seen.filter((s) => s.name === 'lock.released')).toEqual([]);
  });

  it('keeps a listener that throws away from the lock (logged, not rethrown)', async () => {
    events.on('lock.acquired', () => {
      throw new Error('listener bug');
    });
    const lock = await locks.acquire('order:4');
    await lock.release();
    expect(lock.held).toBe(false);
  });
});

describe('RedisLockEvents: job life cycle', () => {
  beforeAll(() => muteNestLogger('warn', 'error'));
  const t = useDelayApp({ delayQueue: { maxAttempts: 2, backoff: { delay: 50, factor: 1, jitter: 0 } } });
  const queue = readThrough('the delay app', () => t.queue);
  const events = readThrough<RedisLockEvents>('the delay app', () => t.app.get(RedisLockEvents));
  afterAll(() => jest.restoreAllMocks());

  it('reports scheduled, started and succeeded with lateness and run time', async () => {
    const seen = record(events, JOB_EVENTS);
    const consumer = queue.consume('ok', async () => {
      await sleep(20);
    });
    try {
      await queue.schedule('ok', { n: 1 }, { id: 'job-1', delay: 100 });
      await waitFor(() => seen.some((s) => s.name === 'job.succeeded'), 10_000, 'job.succeeded');
    } finally {
      await consumer.close();
    }
    expect(seen.map((s) => s.name)).toEqual(['job.scheduled', 'job.started', 'job.succeeded']);
    const [scheduled, started, succeeded] = seen.map((s) => s.event) as [
      RedisLockEventMap['job.scheduled'],
      RedisLockEventMap['job.started'],
      RedisLockEventMap['job.succeeded'],
    ];
    expect(scheduled).toEqual({ topic: 'ok', id: 'job-1', delayMs: 100, replace: false, status: 'created' });
    expect(started).toEqual({ topic: 'ok', id: 'job-1', attempt: 1, latenessMs: expect.any(Number) });
    expect(started.latenessMs).toBeGreaterThanOrEqual(0);
    expect(started.latenessMs).toBeLessThan(2_000);
    expect(succeeded).toEqual({ topic: 'ok', id: 'job-1', attempt: 1, runMs: expect.any(Number) });
    expect(succeeded.runMs).toBeGreaterThanOrEqual(15);
  });

  it('reports failed, retried, then failed and dead on the last attempt, with the error', async () => {
    const seen = record(events, JOB_EVENTS);
    const boom = new Error('boom');
    const consumer = queue.consume('bad', () => {
      throw boom;
    });
    try {
      await queue.schedule('bad', null, { id: 'job-2', at: new Date(Date.now() - 1_000) });
      await waitFor(() => seen.some((s) => s.name === 'job.dead'), 10_000, 'job.dead');
    } finally {
      await consumer.close();
    }
    expect(seen.map((s) => s.name)).toEqual(FAILED_TWICE_THEN_DEAD);
    const byName = <K extends RedisLockEventName>(name: K) =>
      seen.filter((s) => s.name === name).map((s) => s.event) as Array<RedisLockEventMap[K]>;
    expect(byName('job.scheduled')[0]).toEqual({ topic: 'bad', id: 'job-2', at: expect.any(Number), replace: false, status: 'created' });
    expect(byName('job.started').map((e) => e.attempt)).toEqual([1, 2]);
    expect(byName('job.failed')[0]).toEqual({ topic: 'bad', id: 'job-2', attempt: 1, runMs: expect.any(Number), error: boom });
    expect(byName('job.retried')[0]).toEqual({
      topic: 'bad',
      id: 'job-2',
      attempt: 1,
      maxAttempts: 2,
      delayMs: 50,
      error: 'Error: boom',
    });
    expect(byName('job.dead')[0]).toEqual({
      topic: 'bad',
      id: 'job-2',
      attempt: 2,
      maxAttempts: 2,
      error: 'Error: boom',
      unrecoverable: false,
    });
  });

  it('reports scheduleMany job by job', async () => {
    const seen = record(events, ['job.scheduled']);
    await queue.scheduleMany('many', [
      { payload: 1, id: 'a', delay: 60_000 },
      { payload: 2, id: 'b', delay: 60_000 },
    ]);
    expect(seen.map((s) => (s.event as RedisLockEventMap['job.scheduled']).id)).toEqual(['a', 'b']);
    await queue.cancel('many', 'a');
    await queue.cancel('many', 'b');
  });
});
