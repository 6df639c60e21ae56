import type { ModuleMetadata } from '@nestjs/common';
import { Test, type TestingModule, type TestingModuleBuilder } from '@nestjs/testing';
import type { RedisConnectionOptions, RedisLockModuleOptions } from '../core/options/redis-lock-module-options.interface.js';
import { RedisLockModule } from '../redis-lock.module.js';
import { uniqueKeyPrefix } from './unique-key-prefix.js';

/**
 * Anything with the URL of a running Redis: a `TestRedis` from `startTestRedis()`, a `LocalRedisServer`.
 */
export interface RunningTestRedis {
  /** The `redis://` URL of the server. */
  readonly url: string;
  /** Stops the server. */
  stop(): Promise<void>;
}

/**
 * What {@link createRedisLockTestingModule} builds: your module metadata (as for
 * `Test.createTestingModule`), the Redis to use, and `RedisLockModule` options.
 *
 * @example
 * const metadata: RedisLockTestingModuleMetadata = {
 *   redis,                                      // from startTestRedis(), or a URL
 *   imports: [OrdersModule],
 *   redisLock: { lock: { leaseTime: 2_000 } },  // keyPrefix: a unique one unless you set it
 * };
 */
export interface RedisLockTestingModuleMetadata extends ModuleMetadata {
  /** The Redis: a `TestRedis` (`startTestRedis()`), a URL, or any `RedisLockModule` connection option. */
  redis: RunningTestRedis | RedisConnectionOptions;
  /**
   * The rest of `RedisLockModule.forRoot()`'s options. `keyPrefix` defaults to a fresh
   * `uniqueKeyPrefix()`, so modules sharing one Redis never see each other's keys; give two
   * modules the same prefix to make them contend like two instances of an app. `isGlobal`
   * defaults to true, so the modules under test inject `LockService` without importing it.
   */
  redisLock?: Omit<RedisLockModuleOptions, 'redis'> & {
    /** Whether `RedisLockModule` is global in the testing module. Default true. */
    isGlobal?: boolean;
  };
}

/**
 * `Test.createTestingModule()` with `RedisLockModule.forRoot()` already imported, on the given
 * Redis and a key prefix of its own. Returns Nest's `TestingModuleBuilder`, so `overrideProvider`,
 * `overrideModule` and the rest work as usual; `compile()` and `init()` it yourself (or use
 * {@link initRedisLockTestingModule}), and end it with `closeRedisLockTestingModule()`.
 *
 * Do not import a module that calls `RedisLockModule.forRoot()` itself (your `AppModule`): the
 * application would get two. Import the feature modules, or point your AppModule's configuration
 * at the test Redis instead.
 *
 * @example
 * import { createRedisLockTestingModule, closeRedisLockTestingModule, startTestRedis } from 'nestjs-redis-lock/testing';
 *
 * const redis = await startTestRedis();
 * const moduleRef = await createRedisLockTestingModule({ redis, imports: [OrdersModule] })
 *   .overrideProvider(PaymentGateway)
 *   .useValue({ charge: async () => ({ ok: true }) })
 *   .compile();
 * await moduleRef.init(); // runs the module's bootstrap: \@OnDelayed consumers start here
 * await moduleRef.get(OrdersService).pay('order-1');
 * await closeRedisLockTestingModule(moduleRef, { removeKeys: true });
 * await redis.stop();
 */
export function createRedisLockTestingModule(metadata: RedisLockTestingModuleMetadata): TestingModuleBuilder {
  const { redis, redisLock = {}, imports = [], ...moduleMetadata } = metadata;
  const { isGlobal = true, ...options } = redisLock;
  const redisLockModule = RedisLockModule.forRoot({
    keyPrefix: uniqueKeyPrefix(),
    ...options,
    redis: connectionOptionsOf(redis),
    isGlobal,
  });
  return Test.createTestingModule({ ...moduleMetadata, imports: [redisLockModule, ...imports] });
}

/**
 * {@link createRedisLockTestingModule}, compiled and initialised in one call: the module is
 * connected to Redis and its `@OnDelayed` consumers run when the promise resolves. For
 * `overrideProvider` or an HTTP app (`createNestApplication()`), use the builder instead.
 *
 * @example
 * import { closeRedisLockTestingModule, initRedisLockTestingModule, startTestRedis } from 'nestjs-redis-lock/testing';
 * import { LockService } from 'nestjs-redis-lock';
 *
 * const redis = await startTestRedis();
 * const moduleRef = await initRedisLockTestingModule({ redis, providers: [OrdersService] });
 * const locks = moduleRef.get(LockService);
 * await locks.using('order:1', async () => moduleRef.get(OrdersService).pay('1'));
 * await closeRedisLockTestingModule(moduleRef, { removeKeys: true });
 * await redis.stop();
 */
export async function initRedisLockTestingModule(metadata: RedisLockTestingModuleMetadata): Promise<TestingModule> {
  const moduleRef = await createRedisLockTestingModule(metadata).compile();
  try {
    await moduleRef.init();
  } catch (error) {
    // A failed init leaves the connections the module already opened: close them, keep the error.
    await moduleRef.close().catch(() => undefined);
    throw error;
  }
  return moduleRef;
}

function connectionOptionsOf(redis: RunningTestRedis | RedisConnectionOptions): RedisConnectionOptions {
  if (typeof redis === 'object' && redis !== null && 'url' in redis && typeof redis.url === 'string' && 'stop' in redis) {
    return redis.url;
  }
  return redis as RedisConnectionOptions;
}
