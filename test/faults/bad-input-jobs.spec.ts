import type { TestingModule } from '@nestjs/testing';
import {
  DelayQueueClosedError,
  DelayQueueService,
  InvalidJobError,
  InvalidOptionsError,
  InvalidTopicError,
  RedisCommandError,
  RedisConnectionError,
  type ScheduleOptions,
} from '../../lib/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { createLockApp, rawRedis, uniquePrefix } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { RedisKeySpace } from '../../lib/core/keys/redis-key-space.js';
import { topicStats } from '../support/topic-stats.js';

/** What a call threw (or resolved to, which the tests below then reject). */
async function outcome(call: () => unknown): Promise<unknown> {
  try {
    return { resolved: await call() };
  } catch (error) {
    return error;
  }
}

const circular: Record<string, unknown> = { name: 'loop' };
circular.self = circular;
const deep: Record<string, unknown> = {};
let cursor = deep;
for (let i = 0; i < 600; i++) cursor = (cursor.next = {}) as Record<string, unknown>;

failOnUnhandledRejections({ after: 'each' });

/**
 * Every way a caller can hand the delayed-job API something wrong: a typed error whose message names
 * the field and says what to do, and nothing written to Redis (keys checked before and after); or,
 * where the library accepts the value, the documented result.
 */
describe('bad input to delayed jobs', () => {
  const keyPrefix = uniquePrefix('badj');
  let app: TestingModule;
  let queue: DelayQueueService;
  const redis = rawRedis();

  const keysWritten = async () => (await redis.keys(`${keyPrefix}:*`)).sort();
  /** After a case that stores something: leave Redis empty for the next one (wake markers included). */
  const wipe = async () => {
    const keys = await keysWritten();
    if (keys.length > 0) await redis.del(...keys);
  };

  beforeAll(async () => {
    app = await createLockApp({ keyPrefix });
    app.useLogger(false);
    queue = app.get(DelayQueueService);
  });
  afterAll(async () => {
    await app.close();
    redis.disconnect();
  });

  /** Runs `call`, expects `type` with `message`, and that Redis holds exactly what it held before. */
  async function expectRefused(call: () => unknown, type: new (...args: never[]) => Error, message: RegExp): Promise<Error> {
    const before = await keysWritten();
    const error = await outcome(call);
    expect(error).toBeInstanceOf(type);
    expect((error as Error).message).toMatch(message);
    expect(await keysWritten()).toEqual(before);
    return error as Error;
  }

  describe('payloads JSON would change or cannot carry', () => {
    it.each<[string, unknown, string, RegExp]>([
      ['a BigInt', 10n, 'payload', /BigInt.*value\.toString\(\)/],
      ['a nested BigInt', { order: { total: 10n } }, 'payload.order.total', /BigInt/],
      ['a circular structure', circular, 'payload.self', /circular/],
      ['a function', () => 1, 'payload', /function.*data only/],
      ['a method', { run() {} }, 'payload.run', /function/],
      ['a Symbol', Symbol('s'), 'payload', /symbol/],
      ['undefined', undefined, 'payload', /undefined.*use null/],
      ['undefined in an array', [1, undefined], 'payload[1]', /undefined.*use null/],
      ['a hole in a sparse array', [1, , 3], 'payload[1]', /undefined/], // eslint-disable-line no-sparse-arrays
      ['NaN', Number.NaN, 'payload', /NaN.*null/],
      ['Infinity', { ratio: Infinity }, 'payload.ratio', /Infinity/],
      ['-Infinity', [-Infinity], 'payload[0]', /-Infinity/],
      ['a Date', new Date(0), 'payload', /Date.*toISOString\(\)/],
      ['a Date inside an object', { at: new Date(0) }, 'payload.at', /Date/],
      ['an invalid Date', new Date('not a date'), 'payload', /Date/],
      ['a Map', new Map([[1, 2]]), 'payload', /Map.*Object\.fromEntries/],
      ['a Set', new Set([1]), 'payload', /Set/],
      ['a RegExp', /x/, 'payload', /RegExp/],
      ['an Error', new Error('boom'), 'payload', /Error.*message/],
      ['a Buffer', Buffer.from('hi'), 'payload', /binary.*base64/],
      ['a typed array', new Uint8Array(2), 'payload', /binary/],
      ['a Promise', Promise.resolve(1), 'payload', /Promise.*await/],
      ['an object with toJSON()', { toJSON: () => 'other' }, 'payload', /toJSON/],
      ['a key that is not an identifier', { 'a b': 1n }, 'payload["a b"]', /BigInt/],
      ['600 levels of nesting', deep, 'payload', /nested more than 512 levels/],
    ])('%s: InvalidJobError naming the field, nothing written', async (_label, payload, field, message) => {
      const error = (await expectRefused(() => queue.schedule('bad.payload', payload), InvalidJobError, message)) as InvalidJobError;
      expect(error.field.startsWith(field)).toBe(true);
      expect(error.code).toBe('INVALID_JOB');
      expect(error.message).toMatch(/Nothing was scheduled\.$/);
      // The same payload in a batch names its position.
      const batchError = await expectRefused(() => queue.scheduleMany('bad.payload', [{ payload }]), InvalidJobError, message);
      expect((batchError as InvalidJobError).field.startsWith(`jobs[0].${field}`)).toBe(true);
    });

    it.each<[string, unknown, unknown]>([
      ['null', null, null],
      ['an empty string', '', ''],
      ['an empty array', [], []],
      ['an empty object', {}, {}],
      [
        'numbers needing 17 digits (Lua would round them; the payload never passes through cjson)',
        [2 ** 53 + 2, 0.1 + 0.2, 1e308],
        [2 ** 53 + 2, 0.1 + 0.2, 1e308],
      ],
      ['unicode, a lone surrogate, newlines and braces', 'ünï 😀 \uD800 \r\n {tag}', 'ünï 😀 \uD800 \r\n {tag}'],
      [
        'an object with an undefined property (left out, as JSON does: the handler reads undefined either way)',
        { a: undefined, b: 1 },
        { b: 1 },
      ],
      [
        'a class instance (its own enumerable fields; the prototype is not stored)',
        new (class Order {
          id = 7;
        })(),
        { id: 7 },
      ],
      ['an object with a symbol-keyed property (not data: not stored, as JSON does)', { [Symbol('meta')]: 1, id: 8 }, { id: 8 }],
    ])('accepts %s and hands it back unchanged (or as documented)', async (_label, payload, expected) => {
      const id = await queue.schedule('ok.payload', payload, { delay: 60_000 });
      expect((await queue.get('ok.payload', id))?.payload).toEqual(expected);
      expect(await queue.cancel('ok.payload', id)).toBe(true);
      // Only the consumers' wake marker may stay (a sorted set of one member, as in BullMQ), once the
      // answered calls' operation records are deleted (right after their replies: AnsweredRecords).
      const marker = new RedisKeySpace(keyPrefix).topic('ok.payload').marker;
      await waitFor(async () => JSON.stringify(await keysWritten()) === JSON.stringify([marker]), 5_000, 'only the marker left');
      await wipe();
    });

    it('stores an own "__proto__" key as data: it reaches the handler and pollutes no prototype', async () => {
      const payload = JSON.parse('{"__proto__": {"polluted": true}, "id": 1}') as object;
      const id = await queue.schedule('ok.payload', payload, { delay: 60_000 });
      const stored = (await queue.get<Record<string, unknown>>('ok.payload', id))!.payload;
      expect(Object.keys(stored)).toEqual(['__proto__', 'id']);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
      await queue.cancel('ok.payload', id);
      await wipe();
    });

    it(
      'refuses a 10 MB payload with the default limit (512 KiB), naming its size; a raised limit carries ' + 'it (payload-limit.spec.ts)',
      async () => {
        const payload = { blob: 'x'.repeat(10 * 1024 * 1024 - 20) + '😀 end' };
        await expectRefused(
          () => queue.schedule('big.payload', payload),
          InvalidJobError,
          /`payload` is 10485759 bytes as JSON.*delayQueue\.maxPayloadBytes/,
        );
      },
    );
  });

  describe('topic names', () => {
    const calls: Array<[string, (topic: string) => unknown]> = [
      ['schedule', (t) => queue.schedule(t, 1)],
      ['scheduleMany', (t) => queue.scheduleMany(t, [{ payload: 1 }])],
      ['cancel', (t) => queue.cancel(t, 'id')],
      ['reschedule', (t) => queue.reschedule(t, 'id', { delay: 1 })],
      ['get', (t) => queue.get(t, 'id')],
      ['stats', (t) => queue.stats(t)],
      ['deadLetters', (t) => queue.deadLetters(t)],
      ['retryDead', (t) => queue.retryDead(t)],
      ['consume', (t) => queue.consume(t, () => undefined)],
    ];
    describe.each<[string, unknown, RegExp]>([
      ['empty', '', /must not be empty/],
      ['129 characters', 't'.repeat(129), /at most 128 characters/],
      ['a megabyte', 't'.repeat(1024 * 1024), /at most 128 characters/],
      ['with braces', 'order.{expire}', /character that is not allowed/],
      ['a hash-tag closer', 'a}b', /character that is not allowed/],
      ['with a newline', 'order\nexpire', /character that is not allowed/],
      ['with a space', 'order expire', /character that is not allowed/],
      ['unicode', 'commande.expirée', /character that is not allowed/],
      ['an emoji', '😀', /character that is not allowed/],
      ['null', null, /must be a string/],
      ['a number', 42, /must be a string/],
      ['an object', { topic: 'x' }, /must be a string/],
    ])('a topic that is %s', (_label, topic, message) => {
      it.each(calls)('%s: InvalidTopicError with the allowed alphabet, nothing written or started', async (_method, call) => {
        const error = await expectRefused(() => call(topic as string), InvalidTopicError, message);
        expect(error.message).toMatch(/Use 1-128 characters of letters, digits/);
        expect((error as InvalidTopicError).code).toBe('INVALID_TOPIC');
      });
    });

    it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty', 't'.repeat(128), 'order.expire:v2/eu#3_x-y'])(
      'accepts the topic %j end to end, in its own hash tag',
      async (topic) => {
        const ran: unknown[] = [];
        const consumer = queue.consume(topic, (payload) => {
          ran.push(payload);
        });
        try {
          await queue.schedule(topic, { for: topic }, { delay: 500 });
          const keys = await keysWritten();
          const topicKeys = new RedisKeySpace(keyPrefix).topic(topic);
          expect(keys).toEqual(expect.arrayContaining([topicKeys.due, topicKeys.jobs]));
          for (const key of keys) expect(key.startsWith(`${keyPrefix}:dq:{${topic}}:`)).toBe(true);
          await waitFor(() => ran.length === 1, 10_000, `the job of topic ${topic} to run`);
          expect(ran).toEqual([{ for: topic }]);
          await waitFor(async () => (await queue.stats(topic)).active === 0, 5_000, 'the acknowledgement');
        } finally {
          await consumer.close();
          await wipe();
        }
      },
    );
  });

  describe('times, ids and retry options', () => {
    it.each<[string, ScheduleOptions | unknown, string, RegExp]>([
      ['a negative delay', { delay: -1 }, 'delay', /-1; use a finite number of milliseconds >= 0/],
      ['a NaN delay', { delay: Number.NaN }, 'delay', /NaN/],
      ['an infinite delay', { delay: Infinity }, 'delay', /Infinity/],
      ['a delay of -Infinity', { delay: -Infinity }, 'delay', /-Infinity/],
      ['a delay as a string', { delay: '100' }, 'delay', /the string "100"/],
      ['a null delay', { delay: null }, 'delay', /null/],
      ['a delay past the year 2100', { delay: 1e15 }, 'delay', /past the year 2100/],
      ['a negative at', { at: -1 }, 'at', /valid Date or epoch milliseconds >= 0/],
      ['a NaN at', { at: Number.NaN }, 'at', /NaN/],
      ['an infinite at', { at: Infinity }, 'at', /Infinity/],
      ['an at as an ISO string', { at: '2030-01-01T00:00:00Z' }, 'at', /the string/],
      ['an invalid Date', { at: new Date('nope') }, 'at', /an invalid Date/],
      ['an at past the year 2100', { at: Date.UTC(2101, 0, 1) }, 'at', /past the year 2100/],
      ['both delay and at', { delay: 1, at: Date.now() }, 'delay', /both set; give one of them/],
      ['an empty id', { id: '' }, 'id', /non-empty string/],
      ['a numeric id', { id: 42 }, 'id', /non-empty string/],
      ['a 1025-byte id', { id: 'i'.repeat(1025) }, 'id', /longer than 1024 UTF-8 bytes/],
      ['an id of 257 emoji (1028 bytes)', { id: '😀'.repeat(257) }, 'id', /1024 UTF-8 bytes/],
      ['an id with a lone surrogate', { id: 'x\uD800' }, 'id', /lone surrogate/],
      ['maxAttempts 0', { maxAttempts: 0 }, 'maxAttempts', /whole number from 1/],
      ['fractional maxAttempts', { maxAttempts: 1.5 }, 'maxAttempts', /whole number/],
      ['maxAttempts as a string', { maxAttempts: '3' }, 'maxAttempts', /the string "3"/],
      ['backoff jitter above 1', { backoff: { jitter: 2 } }, 'backoff.jitter', /from 0 to 1/],
      ['backoff factor below 1', { backoff: { factor: 0.5 } }, 'backoff.factor', />= 1/],
      ['a negative backoff delay', { backoff: { delay: -1 } }, 'backoff.delay', /from 0 to/],
      ['backoff as a string', { backoff: 'fast' }, 'backoff', /must be an object/],
      ['replace as a string', { replace: 'yes' }, 'replace', /true or false/],
      ['options that are a number', 5, 'options', /must be an object/],
    ])('%s: InvalidJobError naming it, nothing written', async (_label, options, field, message) => {
      const error = await expectRefused(() => queue.schedule('bad.when', 1, options as ScheduleOptions), InvalidJobError, message);
      expect((error as InvalidJobError).field.startsWith(field)).toBe(true);
    });

    it.each<[string, { delay?: unknown; at?: unknown } | null, RegExp]>([
      ['a negative delay', { delay: -5 }, /delay/],
      ['a NaN delay', { delay: Number.NaN }, /delay/],
      ['an invalid Date', { at: new Date('nope') }, /at/],
      ['a string at', { at: 'tomorrow' }, /at/],
      ['no object at all', null, /must be an object/],
    ])('reschedule with %s: InvalidJobError, and the job stays where it was', async (_label, when, message) => {
      const id = await queue.schedule('bad.reschedule', 1, { delay: 60_000 });
      const before = await queue.get('bad.reschedule', id);
      const error = await outcome(() => queue.reschedule('bad.reschedule', id, when as { delay?: number }));
      expect(error).toBeInstanceOf(InvalidJobError);
      expect((error as Error).message).toMatch(message);
      expect(await queue.get('bad.reschedule', id)).toEqual(before);
      await queue.cancel('bad.reschedule', id);
      await wipe();
    });

    it.each<[string, unknown]>([
      ['an empty id', ''],
      ['a number', 42],
      ['undefined', undefined],
    ])('cancel/get/reschedule/retryDead of %s: InvalidJobError', async (_label, id) => {
      for (const call of [
        () => queue.cancel('bad.id', id as string),
        () => queue.get('bad.id', id as string),
        () => queue.reschedule('bad.id', id as string, { delay: 1 }),
      ]) {
        await expectRefused(call, InvalidJobError, /`id`/);
      }
      if (id !== undefined) await expectRefused(() => queue.retryDead('bad.id', id as string), InvalidJobError, /`id`/);
    });

    it.each<[string, () => ScheduleOptions, (delayMs: number) => boolean]>([
      ['delay 0: due now', () => ({ delay: 0 }), (ms) => ms <= 0],
      ['a fractional delay, rounded up to the next millisecond', () => ({ delay: 0.4 }), (ms) => ms <= 1],
      ['an at in the past: due now', () => ({ at: 0 }), (ms) => ms <= 0],
      ['an at given as a Date', () => ({ at: new Date(Date.now() + 60_000) }), (ms) => ms > 50_000 && ms <= 61_000],
    ])('accepts %s', async (_label, options, dueIn) => {
      const id = await queue.schedule('ok.when', 1, options());
      const job = await queue.get('ok.when', id);
      expect(dueIn(job!.scheduledAt!.getTime() - Date.now())).toBe(true);
      await queue.cancel('ok.when', id);
      await wipe();
    });
  });

  describe('scheduleMany: all or nothing', () => {
    it('refuses a batch whose third job is bad, writing none of the others', async () => {
      const error = await expectRefused(
        () => queue.scheduleMany<unknown>('bad.batch', [{ payload: 1 }, { payload: 2, id: 'two' }, { payload: 3n }, { payload: 4 }]),
        InvalidJobError,
        /`jobs\[2\]\.payload` is a BigInt/,
      );
      expect((error as InvalidJobError).field).toBe('jobs[2].payload');
    });

    it('refuses 1200 jobs (three writes of 500) when job 1100 is bad, before writing the first 500', async () => {
      const jobs = Array.from({ length: 1200 }, (_, i) => ({ payload: i, delay: i === 1100 ? -1 : 60_000 }));
      await expectRefused(() => queue.scheduleMany('bad.batch', jobs), InvalidJobError, /`jobs\[1100\]\.delay` is -1/);
    });

    it.each<[string, unknown, RegExp]>([
      ['not an array', 'jobs', /`jobs` is the string "jobs"; pass an array/],
      ['null', null, /`jobs` is null/],
      ['an array with null in it', [{ payload: 1 }, null], /`jobs\[1\]` must be an object with a `payload` property/],
      ['an array with a job without payload', [{ payload: 1 }, { delay: 5 }], /`jobs\[1\]` must be an object with a `payload`/],
      ['an array with a bare number', [7], /`jobs\[0\]` must be an object/],
    ])('refuses %s', async (_label, jobs, message) => {
      await expectRefused(() => queue.scheduleMany('bad.batch', jobs as never), InvalidJobError, message);
    });

    it('accepts an empty array: no ids, nothing written', async () => {
      const before = await keysWritten();
      expect(await queue.scheduleMany('ok.batch', [])).toEqual([]);
      expect(await keysWritten()).toEqual(before);
    });

    it('keeps the first of two jobs with one id in one batch (de-duplication), returning the id twice', async () => {
      const ids = await queue.scheduleMany('ok.batch', [
        { payload: 'first', id: 'same', delay: 60_000 },
        { payload: 'second', id: 'same', delay: 60_000 },
      ]);
      expect(ids).toEqual(['same', 'same']);
      expect((await queue.get('ok.batch', 'same'))?.payload).toBe('first');
      await queue.cancel('ok.batch', 'same');
      await wipe();
    });
  });

  describe('consumer options', () => {
    it.each<[string, unknown, RegExp]>([
      ['concurrency 0', { concurrency: 0 }, /`concurrency`: got 0; use a whole number from 1 to 10000 \(in consume\("bad.consumer"\)\)/],
      ['concurrency NaN', { concurrency: Number.NaN }, /`concurrency.*got NaN/],
      ['negative concurrency', { concurrency: -1 }, /`concurrency/],
      ['fractional concurrency', { concurrency: 1.5 }, /`concurrency/],
      ['concurrency Infinity', { concurrency: Infinity }, /`concurrency/],
      ['concurrency 10001', { concurrency: 10_001 }, /`concurrency/],
      ['concurrency as a string', { concurrency: '4' }, /`concurrency.*the string "4"/],
      ['visibilityTimeout 0', { visibilityTimeout: 0 }, /`visibilityTimeout/],
      ['visibilityTimeout NaN', { visibilityTimeout: Number.NaN }, /`visibilityTimeout/],
      ['visibilityTimeout below 100 ms', { visibilityTimeout: 99 }, /`visibilityTimeout/],
      ['maxAttempts 0', { maxAttempts: 0 }, /`maxAttempts/],
      ['maxIdleWait below 100 ms', { maxIdleWait: 50 }, /`maxIdleWait/],
      ['a negative shutdownTimeout', { shutdownTimeout: -1 }, /`shutdownTimeout/],
      ['backoff jitter below 0', { backoff: { jitter: -0.1 } }, /`backoff.jitter/],
      ['options that are a number', 5, /must be an object/],
    ])('%s: InvalidOptionsError naming the option; no consumer is left registered', async (_label, options, message) => {
      await expectRefused(() => queue.consume('bad.consumer', () => undefined, options as never), InvalidOptionsError, message);
      // Nothing half-registered: a correct consumer of the same topic starts.
      const consumer = queue.consume('bad.consumer', () => undefined);
      expect(consumer.running).toBe(true);
      await consumer.close();
    });

    it('refuses a handler that is not a function', async () => {
      await expectRefused(() => queue.consume('bad.consumer', 'handler' as never), InvalidOptionsError, /handler must be a function/);
    });
  });

  describe('a Redis that is down or refuses', () => {
    let server: LocalRedisServer;
    let downApp: TestingModule;
    let downQueue: DelayQueueService;
    const downPrefix = uniquePrefix('down');

    beforeAll(async () => {
      server = await startLocalRedisServer();
      // maxRetriesPerRequest: 1 makes a call give up after one reconnect attempt; with the ioredis
      // default (20) the same RedisConnectionError comes after ~10 s.
      downApp = await createLockApp({
        keyPrefix: downPrefix,
        redis: { host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 },
      });
      downApp.useLogger(false);
      downQueue = downApp.get(DelayQueueService);
    });
    afterAll(async () => {
      await downApp.close();
      await server.stop();
    });

    it(
      'schedule and scheduleMany reject with RedisConnectionError while Redis is down; nothing is half-written, ' +
        'and it works again after',
      async () => {
        const ran: number[] = [];
        const consumer = downQueue.consume<number>('down', (n) => {
          ran.push(n);
        });
        await downQueue.schedule('down', 0);
        await waitFor(() => ran.length === 1, 5_000, 'the first job');

        // Down until both calls have failed, however long a loaded machine takes to fail them.
        let bringBack!: () => void;
        const restarted = server.restart({ signal: 'SIGKILL', until: new Promise<void>((resolve) => (bringBack = resolve)) });
        await waitFor(() => server.process.signalCode !== null, 10_000, 'redis-server to be killed');
        try {
          const single = await outcome(() => downQueue.schedule('down', 1));
          const many = await outcome(() =>
            downQueue.scheduleMany(
              'down',
              Array.from({ length: 1200 }, (_, i) => ({ payload: 100 + i })),
            ),
          );
          for (const error of [single, many]) {
            expect(error).toBeInstanceOf(RedisConnectionError);
            expect((error as Error).message).toMatch(/Redis did not answer while trying to run scheduleJobs.*check that Redis is up/);
          }
        } finally {
          bringBack();
        }
        await restarted;

        // No AOF: the restarted server is empty. Nothing of the failed calls reached it.
        await waitFor(
          async () => ((await outcome(() => downQueue.stats('down'))) as { resolved?: unknown }).resolved !== undefined,
          10_000,
          'Redis to answer again',
        );
        expect(await downQueue.stats('down')).toEqual(topicStats());
        await downQueue.schedule('down', 2);
        await waitFor(() => ran.length === 2, 15_000, 'a job scheduled after the restart to run');
        expect(ran).toEqual([0, 2]);
        await consumer.close();
      },
    );

    it('schedule rejects with RedisCommandError explaining maxmemory when Redis is out of memory, and stores nothing', async () => {
      const admin = rawRedis(server.url);
      try {
        await admin.config('SET', 'maxmemory-policy', 'noeviction');
        await admin.config('SET', 'maxmemory', '1');
        const error = await outcome(() => downQueue.scheduleMany('oom', [{ payload: 1 }, { payload: 2 }]));
        expect(error).toBeInstanceOf(RedisCommandError);
        expect((error as Error).message).toMatch(/out of memory.*maxmemory/);
        await admin.config('SET', 'maxmemory', '0');
        expect(await downQueue.stats('oom')).toEqual(topicStats());
      } finally {
        await admin.config('SET', 'maxmemory', '0');
        admin.disconnect();
      }
    });

    it('schedule after the application has shut down rejects with DelayQueueClosedError', async () => {
      const closing = await createLockApp({ keyPrefix: downPrefix, redis: server.url });
      const closedQueue = closing.get(DelayQueueService);
      await closing.close();
      const error = await outcome(() => closedQueue.schedule('closed', 1));
      expect(error).toBeInstanceOf(DelayQueueClosedError);
      expect((error as Error).message).toMatch(/schedule a job/);
    });
  });
});
