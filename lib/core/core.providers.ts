import type { Provider } from '@nestjs/common';
import { RedisLockEvents } from './events/redis-lock-events.js';
import { RedisKeySpace } from './keys/redis-key-space.js';
import { REDIS_LOCK_CONFIG, type RedisLockConfig } from './options/redis-lock-config.js';
import type { RedisLockModuleOptions } from './options/redis-lock-module-options.interface.js';
import { resolveRedisLockConfig } from './options/resolve-redis-lock-config.js';
import { RedisConnection } from './connection/redis-connection.js';
import { openTelemetryTracing } from './tracing/open-telemetry-tracing.js';
import { REDIS_LOCK_TRACING, NO_TRACING } from './tracing/redis-lock-tracing.js';
import { defaultUnitOfWork } from './transaction/async-local-unit-of-work.js';
import { TransactionSynchronizer } from './transaction/transaction-synchronizer.interface.js';

/**
 * What both engines stand on, each under its own token so an application (or a test) can override
 * one: the validated configuration, the connection, the key space, the events, the tracing port and
 * the transaction port. `optionsToken` is where the module's raw options are provided.
 */
export function coreProviders(optionsToken: string | symbol): Provider[] {
  return [
    {
      provide: REDIS_LOCK_CONFIG,
      useFactory: (options: RedisLockModuleOptions) => resolveRedisLockConfig(options),
      inject: [optionsToken],
    },
    {
      provide: TransactionSynchronizer,
      useFactory: (config: RedisLockConfig) => config.transactions ?? defaultUnitOfWork,
      inject: [REDIS_LOCK_CONFIG],
    },
    {
      provide: RedisKeySpace,
      useFactory: (config: RedisLockConfig) => new RedisKeySpace(config.keyPrefix),
      inject: [REDIS_LOCK_CONFIG],
    },
    {
      provide: REDIS_LOCK_TRACING,
      useFactory: (config: RedisLockConfig) => (config.tracing ? openTelemetryTracing() : NO_TRACING),
      inject: [REDIS_LOCK_CONFIG],
    },
    RedisConnection,
    RedisLockEvents,
  ];
}
