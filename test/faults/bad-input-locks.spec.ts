import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  InvalidLockKeyError,
  InvalidOptionsError,
  LockService,
  RedisCommandError,
  RedisConnectionError,
  RedisLockModule,
  WithLock,
  type RedisLockModuleOptions,
} from '../../lib/index.js';
import { InvalidLockKeyTemplateError } from '../../lib/core/errors/invalid-lock-key-template.error.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { createLockApp, rawRedis, testRedisUrl, uniquePrefix } from '../support/test-app.js';

/** Every way a caller can hand the lock API something wrong: a typed error, a useful message, nothing written. */
describe('bad input to locks', () => {
  const keyPrefix = uniquePrefix('bad');
  let app: TestingModule;
  let locks: LockService;
  const redis = rawRedis();

  const keysWritten = async () => (await redis.keys(`${keyPrefix}:*`)).length;

  beforeAll(async () => {
    app = await createLockApp({ keyPrefix });
    locks = app.get(LockService);
  });
  afterAll(async () => {
    await app.close();
    redis.disconnect();
  });

  describe.each<[string, unknown, RegExp]>([
    ['an empty key', '', /must not be empty/],
    ['a 1025-character key', 'k'.repeat(1025), /at most 1024 characters/],
    ['a 1025-character key of 4-byte characters', '😀'.repeat(1025), /at most 1024 characters/],
    ['a number', 42, /must be a string/],
    ['undefined', undefined, /must be a string/],
    ['null', null, /must be a string/],
    ['an object', { id: 1 }, /must be a string/],
    ['a lone surrogate', 'x\uDC00', /well-formed Unicode/],
    ['an empty key in a multi-key list', ['a', ''], /must not be empty/],
    ['an empty multi-key list', [], /at least one key/],
  ])('key: %s', (_label, key, message) => {
    it.each([
      ['acquire', () => locks.acquire(key as string)],
      ['tryAcquire', () => locks.tryAcquire(key as string)],
      ['using', () => locks.using(key as string, () => 'never runs')],
    ])('%s rejects with InvalidLockKeyError and writes nothing', async (_method, call) => {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidLockKeyError);
      expect((error as Error).message).toMatch(message);
      expect(await keysWritten()).toBe(0);
    });
  });

  it.each([
    ['{braces}', 'order:{42}'],
    ['a hash-tag closer', 'a}b'],
    ['newlines', 'line\r\nbreak'],
    ['unicode', 'ünïcødé ✓ 😀'],
    ['__proto__', '__proto__'],
    ['constructor', 'constructor'],
    ['a RESP-looking value', '*1\r\n$4\r\nPING\r\n'],
  ])('key with %s is locked safely in its own slot', async (_label, name) => {
    const lock = await locks.acquire(name);
    const keys = await redis.keys(`${keyPrefix}:lock:*`);
    // One owners hash whose hash tag contains no raw brace, plus its fencing counter.
    expect(keys.filter((k) => !k.endsWith(':fence'))).toHaveLength(1);
    expect(/\{([^{}]*)\}/.exec(keys[0])?.[1]).not.toMatch(/[{}]/);
    expect(await locks.isLocked(name)).toBe(true);
    await lock.release();
    await redis.del(...(await redis.keys(`${keyPrefix}:*`)));
  });

  it.each<[string, object, RegExp]>([
    ['negative waitTimeout', { waitTimeout: -1 }, /`waitTimeout`.*-1/],
    ['NaN waitTimeout', { waitTimeout: Number.NaN }, /`waitTimeout`.*NaN/],
    ['Infinity leaseTime', { leaseTime: Infinity }, /`leaseTime`.*Infinity/],
    ['leaseTime below 10 ms', { leaseTime: 1 }, /`leaseTime`/],
    [
      'leaseTime past a year',
      { leaseTime: 366 * 86_400_000 },
      /`leaseTime`: got 31622400000; use a number of milliseconds from 10 to 31536000000/,
    ],
    ['a string waitTimeout', { waitTimeout: '100' }, /`waitTimeout`.*string "100"/],
    ['a signal that is not an AbortSignal', { signal: { aborted: false } }, /`signal`/],
    ['fair as a string', { fair: 'yes' }, /`fair`/],
    ['keyPattern not a string', { keyPattern: 42 }, /`keyPattern`/],
    ['keyPattern too long for a metric label', { keyPattern: 'x'.repeat(201) }, /`keyPattern`.*200/],
  ])('option: %s → InvalidOptionsError, nothing written', async (_label, options, message) => {
    const error = await locks.acquire('opts', options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as Error).message).toMatch(message);
    expect(await keysWritten()).toBe(0);
  });

  it.each([
    ['readWrite().read', () => locks.readWrite('rw').read({ fair: true } as never)],
    ['readWrite().tryWrite', () => locks.readWrite('rw').tryWrite({ fair: true } as never)],
    ['semaphore().acquire', () => locks.semaphore('sem', 2).acquire({ fair: true } as never)],
    ['semaphore().tryAcquire', () => locks.semaphore('sem', 2).tryAcquire({ fair: true } as never)],
  ])('%s with `fair` (no FIFO mode there) → InvalidOptionsError naming it, nothing written', async (_label, call) => {
    const error = await call().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as Error).message).toMatch(/`fair`.*no fair \(FIFO\) mode/);
    expect(await keysWritten()).toBe(0);
  });

  it.each([0, -3, 2.5, Number.NaN, Infinity])('semaphore permits %p → InvalidOptionsError', (permits) => {
    expect(() => locks.semaphore('s', permits)).toThrow(InvalidOptionsError);
  });

  it.each<[string, RedisLockModuleOptions, RegExp]>([
    ['keyPrefix with braces', { keyPrefix: '{x}' }, /`keyPrefix`/],
    ['keyPrefix of 65 characters', { keyPrefix: 'p'.repeat(65) }, /`keyPrefix`/],
    ['lease as a string', { lock: { leaseTime: 'long' as never } }, /`lock.leaseTime`/],
    ['negative connectTimeout', { connectTimeout: -5 }, /`connectTimeout`/],
    ['jitter above 1', { delayQueue: { backoff: { jitter: 2 } } }, /`delayQueue.backoff.jitter`/],
    ['transactions that is not a synchronizer', { transactions: {} as never }, /`transactions`/],
  ])('module option: %s fails at bootstrap', async (_label, options, message) => {
    const error = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ redis: testRedisUrl(), ...options })],
    })
      .compile()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as Error).message).toMatch(message);
  });

  it.each<[string, () => unknown, RegExp]>([
    [
      'an argument index the method does not have',
      () => {
        @Injectable()
        class Orders {
          @WithLock('order:<2>')
          pay(_id: string) {}
        }
        return Orders;
      },
      /Orders\.pay/,
    ],
    [
      'an unclosed placeholder',
      () => {
        @Injectable()
        class Orders {
          @WithLock('order:<0')
          pay(_id: string) {}
        }
        return Orders;
      },
      /Orders\.pay/,
    ],
    [
      'a property path into a string parameter',
      () => {
        @Injectable()
        class Orders {
          @WithLock('order:<0.id>')
          pay(_id: string) {}
        }
        return Orders;
      },
      /Orders\.pay/,
    ],
  ])('@WithLock template with %s fails when the class is defined, naming it', (_label, define, message) => {
    let error: unknown;
    try {
      define();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidLockKeyTemplateError);
    expect((error as Error).message).toMatch(message);
  });

  describe('a Redis that refuses', () => {
    let server: LocalRedisServer;
    beforeAll(async () => {
      server = await startLocalRedisServer({ args: ['--requirepass', 'right-password'] });
    });
    afterAll(() => server.stop());

    it('wrong password: bootstrap fails with RedisConnectionError naming WRONGPASS and saying to check the password', async () => {
      const error = await Test.createTestingModule({
        imports: [
          RedisLockModule.forRoot({
            redis: `redis://:wrong-password@127.0.0.1:${server.port}`,
            connectTimeout: 3_000,
          }),
        ],
      })
        .compile()
        .then((m) => m.init())
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedisConnectionError);
      // The server's own answer, not only the generic advice (which would pass on any failure).
      expect((error as Error).message).toMatch(/WRONGPASS/);
      expect((error as Error).message).toMatch(/Authentication failed.*password/);
      expect((error as Error).message).not.toMatch(/Connection is closed/);
      expect((error as Error).message).not.toContain('right-password');
      expect((error as Error).message).not.toContain('wrong-password');
    });

    it('out of memory: acquire rejects with RedisCommandError explaining maxmemory, and nothing is held', async () => {
      const url = `redis://:right-password@127.0.0.1:${server.port}`;
      const admin = new Redis(url);
      const oomApp = await Test.createTestingModule({
        imports: [RedisLockModule.forRoot({ redis: url, keyPrefix: 'oom' })],
      }).compile();
      await oomApp.init();
      try {
        await admin.config('SET', 'maxmemory-policy', 'noeviction');
        await admin.config('SET', 'maxmemory', '1');
        const error = await oomApp
          .get(LockService)
          .acquire('oom')
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(RedisCommandError);
        expect((error as Error).message).toMatch(/out of memory.*maxmemory/);
        await admin.config('SET', 'maxmemory', '0');
        expect(await oomApp.get(LockService).isLocked('oom')).toBe(false);
      } finally {
        await admin.config('SET', 'maxmemory', '0');
        admin.disconnect();
        await oomApp.close();
      }
    });
  });
});
