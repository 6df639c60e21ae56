import type { DynamicModule, ModuleMetadata, Provider, Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { RedisLockModule, type RedisLockModuleOptions } from '../../lib/index.js';
import { testRedisUrl, uniquePrefix } from './test-app.js';
import { startupFailure } from './thrown.js';

/** Compiles and initialises a testing module of `imports` (Nest's logger as the spec set it); the caller closes it. */
export async function startModule(imports: NonNullable<ModuleMetadata['imports']>): Promise<TestingModule> {
  const app = await Test.createTestingModule({ imports }).compile();
  await app.init();
  return app;
}

/**
 * Compiles a testing module of `RedisLockModule.forRoot(options)` beside `providers`, Nest's logger
 * off, without initialising it (a spec that expects `init()` to fail closes its connections).
 */
export async function compileLockModule(options: RedisLockModuleOptions, providers: Provider[] = []): Promise<TestingModule> {
  const app = await Test.createTestingModule({ imports: [RedisLockModule.forRoot(options)], providers }).compile();
  app.useLogger(false);
  return app;
}

/** `compileLockModule`, initialised; the caller closes it. */
export async function startLockModule(options: RedisLockModuleOptions, providers: Provider[] = []): Promise<TestingModule> {
  const app = await compileLockModule(options, providers);
  await app.init();
  return app;
}

/**
 * What starting an app of `RedisLockModule.forRoot(options)` failed with, Nest's logger off; undefined
 * (the app closed again) when it started. `forRootAsync`: the options come from its factory, checked at
 * bootstrap instead of at the call. `options` are unchecked, as a JavaScript or misconfigured app passes them.
 */
export function lockModuleStartupFailure(options: RedisLockModuleOptions, how: 'forRoot' | 'forRootAsync' = 'forRoot'): Promise<unknown> {
  return startupFailure(async () => {
    const module = how === 'forRoot' ? RedisLockModule.forRoot(options) : RedisLockModule.forRootAsync({ useFactory: () => options });
    const app = await Test.createTestingModule({ imports: [module] }).compile();
    app.useLogger(false);
    return app.init();
  });
}

/**
 * The error compiling an app fails with when its RedisLockModule is registered without isGlobal,
 * beside `imports` (feature modules that use it without importing it); fails the test when it compiles.
 */
export async function compileErrorBesideLockModule(...imports: Array<Type | DynamicModule>): Promise<Error> {
  // A client of the test's own, never connected, so a failed compile leaves no socket open.
  const client = new Redis(testRedisUrl(), { lazyConnect: true });
  try {
    const app = await Test.createTestingModule({
      imports: [RedisLockModule.forRoot({ redis: { client }, keyPrefix: uniquePrefix('vis'), connectTimeout: 0 }), ...imports],
    }).compile();
    await app.close();
  } catch (error) {
    return error as Error;
  } finally {
    client.disconnect();
  }
  throw new Error('bootstrap did not fail');
}
