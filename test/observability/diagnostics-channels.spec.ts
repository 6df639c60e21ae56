import { spawn, type ChildProcess } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { jest } from '@jest/globals';
import {
  LockService,
  REDIS_LOCK_CHANNELS,
  RedisLockEvents,
  runInTransaction,
  type RedisLockEventMap,
  type RedisLockEventName,
} from '../../lib/index.js';
import { redisLockChannel } from '../../lib/core/events/redis-lock.channels.js';
import { createDelayApp, useDelayApp } from '../delay-queue/support/delay-test-app.js';
import { TYPESCRIPT_NODE_ARGS } from '../support/child-process.js';
import { createLockApp, rawRedis, testRedisUrl, uniquePrefix, useLockApp } from '../support/test-app.js';
import { readThrough } from '../support/use-resource.js';
import { sleep, waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { FAILED_TWICE_THEN_DEAD } from './support/job-event-sequences.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';

const ROOT = join(import.meta.dirname, '..', '..');
const ALL_EVENTS = Object.keys(REDIS_LOCK_CHANNELS) as RedisLockEventName[];

type Payload = RedisLockEventMap[RedisLockEventName];
interface Seen {
  /** The event name (emitter) or the channel name (diagnostics_channel). */
  readonly name: string;
  readonly event: Payload;
}

/**
 * Records `names` twice: from the app's `RedisLockEvents` and from their diagnostics channels. A
 * channel is process-wide, so only events about this test's own keys and topics (`mine`) are kept.
 */
function tap(events: RedisLockEvents, names: readonly RedisLockEventName[], mine: (event: Payload) => boolean) {
  const fromEmitter: Seen[] = [];
  const fromChannels: Seen[] = [];
  const undo: Array<() => void> = [];
  for (const name of names) {
    const listener = (event: Payload) => void (mine(event) && fromEmitter.push({ name, event }));
    const subscriber = (message: unknown, channel: string | symbol) =>
      void (mine(message as Payload) && fromChannels.push({ name: String(channel), event: message as Payload }));
    events.on(name, listener as never);
    subscribe(REDIS_LOCK_CHANNELS[name], subscriber);
    undo.push(() => {
      events.off(name, listener as never);
      unsubscribe(REDIS_LOCK_CHANNELS[name], subscriber);
    });
  }
  return {
    fromEmitter,
    fromChannels,
    /** The channel names seen, in order, without their `nestjs-redis-lock:` prefix. */
    channelEvents: () => fromChannels.map((s) => s.name.replace(/^nestjs-redis-lock:/, '')),
    stop: () => undo.forEach((fn) => fn()),
  };
}

/** Every message on the channels is the very object the listeners got, on the channel of its event, in the same order. */
function expectSameEvents(t: ReturnType<typeof tap>): void {
  expect(t.fromChannels.map((s) => s.name)).toEqual(t.fromEmitter.map((s) => `nestjs-redis-lock:${s.name}`));
  t.fromChannels.forEach((s, i) => expect(s.event).toBe(t.fromEmitter[i].event));
}

const withKey = (prefix: string) => (event: Payload) => 'key' in event && event.key.startsWith(prefix);
const withTopic = (prefix: string) => (event: Payload) => 'topic' in event && event.topic.startsWith(prefix);

failOnUnhandledRejections();
beforeAll(() => {
  muteNestLogger('warn', 'error');
});
afterAll(() => {
  jest.restoreAllMocks();
});

describe('REDIS_LOCK_CHANNELS', () => {
  it('names one channel per event, nestjs-redis-lock:<event>, and redisLockChannel() returns its Channel', async () => {
    const { channel } = await import('node:diagnostics_channel');
    expect(ALL_EVENTS).toHaveLength(25);
    for (const event of ALL_EVENTS) {
      expect(REDIS_LOCK_CHANNELS[event]).toBe(`nestjs-redis-lock:${event}`);
      expect(redisLockChannel(event)).toBe(channel(REDIS_LOCK_CHANNELS[event]));
      expect(redisLockChannel(event).name).toBe(REDIS_LOCK_CHANNELS[event]);
    }
  });
});

describe('diagnostics_channel: lock events', () => {
  const app = useLockApp();
  const locks = app.get(LockService);
  const events = app.get(RedisLockEvents);

  it('publishes lock.acquired, lock.released and lock.timeout on their channels: the objects the listeners get', async () => {
    const key = uniquePrefix('order');
    const t = tap(events, ALL_EVENTS, withKey(key));
    try {
      const lock = await locks.acquire(key, { keyPattern: 'order:<id>' });
      await expect(locks.acquire(key, { waitTimeout: 100 })).rejects.toThrow(/Could not acquire/);
      expect(await locks.tryAcquire(key)).toBeNull();
      await sleep(30);
      await lock.release();

      expect(t.channelEvents()).toEqual(['lock.acquired', 'lock.timeout', 'lock.timeout', 'lock.released']);
      expectSameEvents(t);
      const [acquired, timedOut, tried, released] = t.fromChannels.map((s) => s.event);
      expect(acquired).toEqual({ key, keyPattern: 'order:<id>', fencingToken: lock.fencingToken, waitMs: expect.any(Number) });
      expect(timedOut).toEqual({ key, keyPattern: undefined, waitTimeout: 100, waitMs: expect.any(Number) });
      expect(tried).toEqual({ key, keyPattern: undefined, waitTimeout: 0, waitMs: expect.any(Number) });
      expect(released).toEqual({ key, keyPattern: 'order:<id>', fencingToken: lock.fencingToken, holdMs: expect.any(Number) });
      expect((released as RedisLockEventMap['lock.released']).holdMs!).toBeGreaterThanOrEqual(25);
    } finally {
      t.stop();
    }
  });

  it('publishes lock.lost with its LockLostError', async () => {
    const key = uniquePrefix('lease');
    const t = tap(events, ALL_EVENTS, withKey(key));
    try {
      const lock = await locks.acquire(key, { leaseTime: 200 });
      const redis = rawRedis();
      try {
        await redis.del(app.get(RedisKeySpace).lock(key).owners);
      } finally {
        redis.disconnect();
      }
      await waitFor(() => t.channelEvents().includes('lock.lost'), 10_000, 'lock.lost on its channel');
      expect(t.channelEvents()).toEqual(['lock.acquired', 'lock.lost']);
      expectSameEvents(t);
      expect(t.fromChannels[1].event).toEqual({
        key,
        keyPattern: undefined,
        fencingToken: lock.fencingToken,
        error: lock.signal.reason,
        holdMs: expect.any(Number),
      });
      await lock.release();
    } finally {
      t.stop();
    }
  });

  it('builds nothing when no listener and no subscriber wants an event', async () => {
    for (const event of ALL_EVENTS) expect(events.wants(event)).toBe(false);
    const emit = jest.spyOn(events, 'emit');
    try {
      const key = uniquePrefix('quiet');
      const lock = await locks.acquire(key);
      expect(await locks.tryAcquire(key)).toBeNull();
      await lock.release();
      expect(emit).not.toHaveBeenCalled();
    } finally {
      emit.mockRestore();
    }
  });

  it('builds an event for a channel subscriber alone (and times the hold from the acquire it was there for)', async () => {
    const key = uniquePrefix('sub-only');
    const messages: unknown[] = [];
    const subscriber = (message: unknown) => void (withKey(key)(message as Payload) && messages.push(message));
    subscribe(REDIS_LOCK_CHANNELS['lock.released'], subscriber);
    try {
      expect(events.listenerCount('lock.released')).toBe(0);
      expect(events.wants('lock.released')).toBe(true);
      expect(events.wants('lock.acquired')).toBe(false);
      const lock = await locks.acquire(key);
      await sleep(20);
      await lock.release();
      expect(messages).toEqual([{ key, keyPattern: undefined, fencingToken: lock.fencingToken, holdMs: expect.any(Number) }]);
      expect((messages[0] as { holdMs: number }).holdMs).toBeGreaterThanOrEqual(15);
    } finally {
      unsubscribe(REDIS_LOCK_CHANNELS['lock.released'], subscriber);
    }
  });

  it('stops publishing, and building, once the subscriber unsubscribes', async () => {
    const key = uniquePrefix('unsub');
    const acquired = redisLockChannel('lock.acquired');
    const messages: unknown[] = [];
    const subscriber = (message: unknown) => void (withKey(key)(message as Payload) && messages.push(message));
    acquired.subscribe(subscriber);
    const first = await locks.acquire(key);
    await first.release();
    expect(messages).toHaveLength(1);

    expect(acquired.unsubscribe(subscriber)).toBe(true);
    expect(events.wants('lock.acquired')).toBe(false);
    const emit = jest.spyOn(events, 'emit');
    try {
      const second = await locks.acquire(key);
      await second.release();
      expect(emit).not.toHaveBeenCalled();
      expect(messages).toHaveLength(1);
    } finally {
      emit.mockRestore();
    }
  });

  it('carries the events of every application of the process on the same channel', async () => {
    const other = await createLockApp();
    const key = uniquePrefix('shared');
    const otherEvents = other.get(RedisLockEvents);
    const ownOnly: string[] = [];
    const otherOnly: string[] = [];
    events.on('lock.acquired', (e) => void (e.key.startsWith(key) && ownOnly.push(e.key)));
    otherEvents.on('lock.acquired', (e) => void (e.key.startsWith(key) && otherOnly.push(e.key)));
    const onChannel: string[] = [];
    const subscriber = (message: unknown) => {
      const { key: name } = message as RedisLockEventMap['lock.acquired'];
      if (name.startsWith(key)) onChannel.push(name);
    };
    subscribe(REDIS_LOCK_CHANNELS['lock.acquired'], subscriber);
    try {
      await (await locks.acquire(`${key}:a`)).release();
      await (await other.get(LockService).acquire(`${key}:b`)).release();
      expect(onChannel).toEqual([`${key}:a`, `${key}:b`]);
      expect(ownOnly).toEqual([`${key}:a`]);
      expect(otherOnly).toEqual([`${key}:b`]);
    } finally {
      unsubscribe(REDIS_LOCK_CHANNELS['lock.acquired'], subscriber);
      events.removeAllListeners('lock.acquired');
      await other.close();
    }
  });
});

describe('diagnostics_channel: job events', () => {
  const t = useDelayApp({ delayQueue: { maxAttempts: 2, backoff: { delay: 50, factor: 1, jitter: 0 } } });
  const events = readThrough<RedisLockEvents>('the delay app', () => t.app.get(RedisLockEvents));

  it('publishes job.scheduled, job.started and job.succeeded: the objects the listeners get', async () => {
    const topic = uniquePrefix('ok');
    const seen = tap(events, ALL_EVENTS, withTopic(topic));
    const consumer = t.queue.consume(topic, async () => {
      await sleep(20);
    });
    try {
      await t.queue.schedule(topic, { n: 1 }, { id: 'job-1', delay: 100 });
      await waitFor(() => seen.channelEvents().includes('job.succeeded'), 10_000, 'job.succeeded on its channel');
    } finally {
      await consumer.close();
      seen.stop();
    }
    expect(seen.channelEvents()).toEqual(['job.scheduled', 'job.started', 'job.succeeded']);
    expectSameEvents(seen);
    const [scheduled, started, succeeded] = seen.fromChannels.map((s) => s.event);
    expect(scheduled).toEqual({ topic, id: 'job-1', delayMs: 100, replace: false, status: 'created' });
    expect(started).toEqual({ topic, id: 'job-1', attempt: 1, latenessMs: expect.any(Number) });
    expect(succeeded).toEqual({ topic, id: 'job-1', attempt: 1, runMs: expect.any(Number) });
  });

  it('publishes job.progress once Redis recorded it, and job.succeeded with the result', async () => {
    const topic = uniquePrefix('progress');
    const seen = tap(events, ALL_EVENTS, withTopic(topic));
    const consumer = t.queue.consume(topic, async (_payload, job) => {
      await job.progress({ done: 1 });
      return { rows: 3 };
    });
    try {
      await t.queue.schedule(topic, null, { id: 'job-3' });
      await waitFor(() => seen.channelEvents().includes('job.succeeded'), 10_000, 'job.succeeded on its channel');
    } finally {
      await consumer.close();
      seen.stop();
    }
    expect(seen.channelEvents()).toEqual(['job.scheduled', 'job.started', 'job.progress', 'job.succeeded']);
    expectSameEvents(seen);
    const [, , progress, succeeded] = seen.fromChannels.map((s) => s.event);
    expect(progress).toEqual({ topic, id: 'job-3', attempt: 1, progress: { done: 1 } });
    expect(succeeded).toEqual({ topic, id: 'job-3', attempt: 1, runMs: expect.any(Number), result: { rows: 3 } });
  });

  it('publishes job.failed, job.retried and job.dead', async () => {
    const topic = uniquePrefix('bad');
    const seen = tap(events, ALL_EVENTS, withTopic(topic));
    const boom = new Error('boom');
    const consumer = t.queue.consume(topic, () => {
      throw boom;
    });
    try {
      await t.queue.schedule(topic, null, { id: 'job-2' });
      await waitFor(() => seen.channelEvents().includes('job.dead'), 10_000, 'job.dead on its channel');
    } finally {
      await consumer.close();
      seen.stop();
    }
    expect(seen.channelEvents()).toEqual(FAILED_TWICE_THEN_DEAD);
    expectSameEvents(seen);
    const byName = (name: RedisLockEventName) => seen.fromChannels.filter((s) => s.name === REDIS_LOCK_CHANNELS[name]).map((s) => s.event);
    expect(byName('job.failed')[0]).toEqual({ topic, id: 'job-2', attempt: 1, runMs: expect.any(Number), error: boom });
    expect(byName('job.retried')).toEqual([{ topic, id: 'job-2', attempt: 1, maxAttempts: 2, delayMs: 50, error: 'Error: boom' }]);
    expect(byName('job.dead')).toEqual([{ topic, id: 'job-2', attempt: 2, maxAttempts: 2, error: 'Error: boom', unrecoverable: false }]);
  });

  it('builds no job event when nobody listens or subscribes', async () => {
    const topic = uniquePrefix('quiet');
    for (const event of ALL_EVENTS) expect(events.wants(event)).toBe(false);
    const emit = jest.spyOn(events, 'emit');
    const runs: string[] = [];
    const consumer = t.queue.consume(topic, (_payload, job) => {
      runs.push(job.id);
      if (job.attempt === 1) throw new Error('first try fails');
    });
    try {
      await t.queue.schedule(topic, 1, { id: 'quiet-1' });
      await waitFor(async () => runs.length === 2 && (await t.queue.get(topic, 'quiet-1')) === null, 10_000, 'two runs and the ack');
      expect(emit).not.toHaveBeenCalled();
    } finally {
      await consumer.close();
      emit.mockRestore();
    }
  });

  it("publishes job.recovered (then job.dead) from the consumer that takes back a dead consumer's job", async () => {
    const keyPrefix = uniquePrefix('dq');
    const topic = uniquePrefix('last-try');
    const child = spawn(process.execPath, [...TYPESCRIPT_NODE_ARGS, join(ROOT, 'test', 'fixtures', 'delay-crash-consumer.ts')], {
      cwd: ROOT,
      env: { ...process.env, REDIS_URL: testRedisUrl(), KEY_PREFIX: keyPrefix, TOPIC: topic, VISIBILITY: '1000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = linesOf(child);
    const survivor = await createDelayApp({ keyPrefix });
    const seen = tap(survivor.app.get(RedisLockEvents), ALL_EVENTS, withTopic(topic));
    try {
      await output.until((line) => line === 'ready', 'the child consumer to be ready');
      await survivor.queue.schedule(topic, { n: 1 }, { id: 'only-try', maxAttempts: 1 });
      await output.until((line) => line.startsWith('started only-try'), 'the child to start the job');
      const consumer = survivor.queue.consume(topic, () => undefined);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      await waitFor(() => seen.channelEvents().includes('job.dead'), 15_000, 'job.recovered and job.dead on their channels');
      await consumer.close();
    } finally {
      child.kill('SIGKILL');
      seen.stop();
      await survivor.close();
    }
    expect(seen.channelEvents()).toEqual(['job.scheduled', 'job.recovered', 'job.dead']);
    expectSameEvents(seen);
    expect(seen.fromChannels[1].event).toEqual({ topic, id: 'only-try', attempt: 1, maxAttempts: 1, requeued: false });
    expect(seen.fromChannels[2].event).toEqual({
      topic,
      id: 'only-try',
      attempt: 1,
      maxAttempts: 1,
      error: expect.stringContaining('Visibility timeout passed without an acknowledgement'),
      unrecoverable: false,
    });
  });
});

describe('diagnostics_channel: writes after COMMIT while Redis is down', () => {
  const server = useLocalRedisServer();

  it('publishes job.schedule.retrying, then job.schedule.lost at shutdown', async () => {
    const topic = uniquePrefix('commit');
    const t = await createDelayApp({
      redis: { host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 },
      delayQueue: { shutdownTimeout: 1_000 },
    });
    const seen = tap(t.app.get(RedisLockEvents), ALL_EVENTS, withTopic(topic));
    try {
      await server.stop();
      await runInTransaction(() => t.queue.schedule(topic, { n: 1 }, { id: 'after-commit-1' }));
      await waitFor(() => seen.channelEvents().includes('job.schedule.retrying'), 10_000, 'job.schedule.retrying on its channel');
      await t.close();
    } finally {
      seen.stop();
      await t.close();
    }
    const names = seen.channelEvents();
    expect(names.at(-1)).toBe('job.schedule.lost');
    expect(new Set(names.slice(0, -1))).toEqual(new Set(['job.schedule.retrying']));
    expectSameEvents(seen);
    expect(seen.fromChannels[0].event).toEqual({
      topic,
      ids: ['after-commit-1'],
      attempt: 1,
      retryInMs: expect.any(Number),
      error: expect.any(String),
    });
    expect(seen.fromChannels.at(-1)!.event).toEqual({
      topic,
      ids: ['after-commit-1'],
      payloadBytes: Buffer.byteLength(JSON.stringify({ n: 1 })),
      attempts: expect.any(Number),
      error: expect.any(String),
    });
  });
});

describe('a channel subscriber that throws', () => {
  // In a process of its own: Node re-raises a subscriber's exception as an 'uncaughtException'
  // of the real process on the next tick, outside Jest's sandbox.
  function runFixture(mode: 'handled' | 'unhandled'): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(
      process.execPath,
      [...TYPESCRIPT_NODE_ARGS, join(import.meta.dirname, 'fixtures', 'throwing-channel-subscriber.ts')],
      {
        cwd: ROOT,
        env: { ...process.env, REDIS_URL: testRedisUrl(), KEY_PREFIX: uniquePrefix('throwing'), MODE: mode },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
  }

  it('fails neither a lock nor a job; the other subscribers still get every message', async () => {
    const { code, stdout, stderr } = await runFixture('handled');
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(result).toMatchObject({
      heldAfterAcquire: true,
      heldAfterRelease: false,
      reacquired: true,
      runs: ['report-1'],
      jobAfterRun: null,
      stats: { scheduled: 0, due: 0, active: 0, dead: 0 },
    });
    const expected = ['lock.acquired', 'lock.released', 'lock.acquired', 'lock.released', 'job.scheduled', 'job.started', 'job.succeeded'];
    expect(result.received).toEqual(expected.map((e) => `nestjs-redis-lock:${e}`));
    // Node reports each exception as an 'uncaughtException' (here handled by the application).
    expect(result.uncaught).toEqual(expected.map((e) => `subscriber bug on nestjs-redis-lock:${e}`));
  });

  it("ends a process that does not handle uncaughtException (Node's rule for every channel)", async () => {
    const { code, stdout, stderr } = await runFixture('unhandled');
    expect(code).not.toBe(0);
    expect(stdout).not.toContain('still running');
    expect(stderr).toContain('Error: subscriber bug on nestjs-redis-lock:lock.acquired');
  });
});

/** Collects the stdout lines of `child`; `until(match)` resolves once one matches, and fails fast if the child exits. */
function linesOf(child: ChildProcess) {
  const lines: string[] = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
  return {
    until: (match: (line: string) => boolean, what: string) =>
      waitFor(
        () => {
          if (lines.some(match)) return true;
          if (child.exitCode !== null) throw new Error(`child exited (${child.exitCode}) before ${what}:\n${stderr}`);
          return false;
        },
        30_000,
        what,
      ),
  };
}
