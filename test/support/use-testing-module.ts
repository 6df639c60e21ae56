import type { ModuleMetadata, Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { DelayQueueService, LockService } from '../../lib/index.js';

/** An application a describe block's tests share; read it in a test or in a hook registered after it. */
export interface ModuleUnderTest {
  readonly app: TestingModule;
  readonly locks: LockService;
  readonly queue: DelayQueueService;
  get<T>(type: Type<T>): T;
}

/**
 * Compiles and initialises a testing module of `metadata` (RedisLockModule among its imports) before
 * the block's tests, and closes it after them. `metadata` is called in the hook, so it may read what
 * hooks registered before it made (a server's URL).
 */
export function useTestingModule(metadata: () => ModuleMetadata): ModuleUnderTest {
  let app: TestingModule | undefined;
  beforeAll(async () => {
    app = await Test.createTestingModule(metadata()).compile();
    await app.init();
  });
  afterAll(() => app?.close());
  const started = (): TestingModule => {
    if (!app) throw new Error('the testing module is not started: read it in a hook or test, after useTestingModule');
    return app;
  };
  return {
    get app() {
      return started();
    },
    get locks() {
      return started().get(LockService);
    },
    get queue() {
      return started().get(DelayQueueService);
    },
    get: (type) => started().get(type),
  };
}
