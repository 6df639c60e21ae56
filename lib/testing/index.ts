/**
 * `nestjs-redis-lock/testing`: for your own tests (a Redis to test against, a testing module, key
 * clean-up). A separate entry point, so that `@nestjs/testing` (an optional peer dependency) is loaded
 * only by the tests that use it; the main entry never imports it.
 *
 * @module nestjs-redis-lock/testing
 */
export { startTestRedis, type StartTestRedisOptions, type TestRedis } from './start-test-redis.js';
export {
  findFreePort,
  hasRedisServerBinary,
  startLocalRedisServer,
  type LocalRedisServer,
  type LocalRedisServerOptions,
} from './local-redis-server.js';
export {
  createRedisLockTestingModule,
  initRedisLockTestingModule,
  type RedisLockTestingModuleMetadata,
  type RunningTestRedis,
} from './redis-lock-testing-module.js';
export {
  closeRedisLockTestingModule,
  removeRedisLockKeys,
  type CloseRedisLockTestingModuleOptions,
  type RedisLockTestingApp,
} from './close-redis-lock-testing-module.js';
export { uniqueKeyPrefix } from './unique-key-prefix.js';
export { TestRedisUnavailableError } from './test-redis-unavailable.error.js';
export { TestKeysNotRemovedError } from './test-keys-not-removed.error.js';
