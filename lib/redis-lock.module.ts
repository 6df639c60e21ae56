import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { DelayQueueOrchestrator } from './delay-queue/delay-queue.orchestrator.js';
import { DelayQueueService } from './delay-queue/delay-queue.service.js';
import { DelayedHandlerExplorer } from './delay-queue/delayed-handler.explorer.js';
import { DelayedHandlerMetadataAccessor } from './delay-queue/delayed-handler-metadata.accessor.js';
import { TopicInspector } from './delay-queue/topic-inspector.js';
import { WithLockInterceptor } from './decorators/with-lock.interceptor.js';
import { LockInspector } from './lock/lock-inspector.js';
import { LockService } from './lock/lock.service.js';
import { RedlockMasters } from './lock/redlock/redlock-masters.js';
import { RedisLockEvents } from './lock/lock-events.js';
import { resolveRedisLockConfig } from './options/resolve-redis-lock-config.js';
import type { RedisLockModuleOptions } from './options/redis-lock-module-options.interface.js';
import { RedisConnection } from './redis/redis-connection.js';
import { ConfigurableRedisLockModule, REDIS_LOCK_MODULE_OPTIONS } from './redis-lock.module-definition.js';
import { REDIS_LOCK_CONFIG } from './redis-lock.constants.js';
import { defaultUnitOfWork } from './transaction/async-local-unit-of-work.js';
import { TransactionSynchronizer } from './transaction/transaction-synchronizer.interface.js';
import type { RedisLockConfig } from './options/redis-lock-config.js';

/**
 * Distributed locks and delayed jobs on Redis.
 *
 * @example
 * \@Module({ imports: [RedisLockModule.forRoot({ redis: process.env.REDIS_URL, isGlobal: true })] })
 * export class AppModule {}
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: REDIS_LOCK_CONFIG,
      useFactory: (options: RedisLockModuleOptions) => resolveRedisLockConfig(options),
      inject: [REDIS_LOCK_MODULE_OPTIONS],
    },
    {
      provide: TransactionSynchronizer,
      useFactory: (config: RedisLockConfig) => config.transactions ?? defaultUnitOfWork,
      inject: [REDIS_LOCK_CONFIG],
    },
    RedisConnection,
    RedisLockEvents,
    RedlockMasters,
    LockService,
    DelayQueueService,
    DelayedHandlerMetadataAccessor,
    DelayedHandlerExplorer,
    DelayQueueOrchestrator,
    LockInspector,
    TopicInspector,
    // Takes @WithRequestLock locks and answers lock timeouts with 409 Conflict over HTTP.
    { provide: APP_INTERCEPTOR, useClass: WithLockInterceptor },
  ],
  // RedisConnection (health indicator) and the inspectors (dashboard) are exported for the add-ons; they are not public API.
  exports: [LockService, RedisLockEvents, TransactionSynchronizer, DelayQueueService, RedisConnection, LockInspector, TopicInspector],
})
export class RedisLockModule extends ConfigurableRedisLockModule {}
