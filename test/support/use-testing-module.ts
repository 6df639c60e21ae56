import type { ModuleMetadata, Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { DelayQueueService, LockService } from '../../lib/index.js';
import { useResource } from './use-resource.js';

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
  const app = useResource(
    'the testing module',
    async () => {
      const compiled = await Test.createTestingModule(metadata()).compile();
      await compiled.init();
      return compiled;
    },
    (compiled) => compiled.close(),
  );
  return {
    app,
    get locks() {
      return app.get(LockService);
    },
    get queue() {
      return app.get(DelayQueueService);
    },
    get: (type) => app.get(type),
  };
}
