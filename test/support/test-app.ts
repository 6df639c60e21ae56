import type { Type } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { LockService, type RedisLockModuleOptions } from '../../lib/index.js';
import { RedisConnection } from '../../lib/core/connection/redis-connection.js';
import { closeRedisLockTestingModule, initRedisLockTestingModule, uniqueKeyPrefix } from '../../lib/testing/index.js';
import { redisOptionFor } from './test-driver.js';
import { readThrough } from './use-resource.js';

/** The Redis URL of this run (set by global-setup). */
export function testRedisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error('REDIS_URL is not set: run the tests through jest so that global-setup starts Redis.');
  return url;
}

/** A key prefix no other spec uses, so specs can share one Redis (`nestjs-redis-lock/testing`'s `uniqueKeyPrefix`). */
export function uniquePrefix(label = 't'): string {
  return uniqueKeyPrefix(label);
}

/**
 * A Nest testing module with RedisLockModule on the run's Redis (or `options.redis`), built with
 * `nestjs-redis-lock/testing`'s `initRedisLockTestingModule`; closed with `app.close()` or
 * `closeRedisLockTestingModule(app, { removeKeys: true })`.
 */
export async function createLockApp(options: RedisLockModuleOptions = {}): Promise<TestingModule> {
  const { redis = testRedisUrl(), ...redisLock } = options;
  const onDriver = typeof redis === 'string' ? redisOptionFor(redis) : redis;
  return initRedisLockTestingModule({ redis: onDriver, redisLock: { keyPrefix: uniquePrefix(), ...redisLock } });
}

/**
 * Initialises a compiled module. A bootstrap error (what some specs expect) must not leave the
 * module's connections open, and Nest's close() rethrows the init error without running any hook,
 * so the connections are closed directly before the error is rethrown.
 */
export async function initOrCloseConnections(app: TestingModule): Promise<TestingModule> {
  try {
    await app.init();
  } catch (error) {
    await app.get(RedisConnection).onApplicationShutdown();
    throw error;
  }
  return app;
}

/**
 * A plain client for looking at (or tampering with) keys from outside the library. Disconnected
 * after its server was killed, it waits 100 ms for the dead socket to close, not ioredis' 2 s on a
 * referenced timer that would keep a Jest worker alive past its last spec (as the module's own
 * connections do, lib/core/redis/create-redis-client.ts).
 */
export function rawRedis(url = testRedisUrl()): Redis {
  return new Redis(url, { maxRetriesPerRequest: 1, disconnectTimeout: 100 });
}

/** A plain client (`rawRedis(url)`) for a describe block, disconnected after its tests. */
export function useRawRedis(url?: string): Redis {
  const redis = rawRedis(url);
  afterAll(() => redis.disconnect());
  return redis;
}

/** One lock app for a spec's tests. */
export interface LockAppUnderTest {
  /** The app; call it in a `beforeAll` registered after `useLockApp`, or in a test. */
  app(): TestingModule;
  locks(): LockService;
  /** A provider of the app, read through (`readThrough`): declare it with the block, use it in its tests. */
  get<T extends object>(type: Type<T>): T;
}

/** Starts a lock app (`createLockApp(options)`) before the spec's tests and closes it after them. */
export function useLockApp(options: RedisLockModuleOptions = {}): LockAppUnderTest {
  let app: TestingModule | undefined;
  beforeAll(async () => {
    app = await createLockApp(options);
  });
  afterAll(() => app?.close());
  const started = (): TestingModule => {
    if (!app) throw new Error('the lock app is not started: read it in a hook or test, after useLockApp');
    return app;
  };
  return { app: started, locks: () => started().get(LockService), get: (type) => readThrough(type.name, () => app?.get(type)) };
}

/** Two module instances on one key prefix: they behave like two processes contending for the same locks. */
export interface LockServicePair {
  readonly keyPrefix: string;
  /** Both services; call it in a `beforeAll` registered after `useLockServicePair`. */
  services(): { a: LockService; b: LockService };
  /** The first service, read through (`readThrough`): use it in the tests as the service itself. */
  readonly a: LockService;
  /** The second service, read through. */
  readonly b: LockService;
}

/** Starts two lock apps before the spec's tests; closes them after, then removes their keys. */
export function useLockServicePair(label: string, options: RedisLockModuleOptions = {}): LockServicePair {
  const keyPrefix = uniquePrefix(label);
  let apps: TestingModule[] = [];
  beforeAll(async () => {
    apps = await Promise.all([createLockApp({ ...options, keyPrefix }), createLockApp({ ...options, keyPrefix })]);
  });
  afterAll(async () => {
    // The second closes after the first, so no key is written after the removal.
    const [first, second] = apps;
    await first?.close();
    if (second) await closeRedisLockTestingModule(second, { removeKeys: true });
  });
  return {
    keyPrefix,
    services: () => ({ a: apps[0].get(LockService), b: apps[1].get(LockService) }),
    a: readThrough('the first lock app', () => apps[0]?.get(LockService)),
    b: readThrough('the second lock app', () => apps[1]?.get(LockService)),
  };
}
