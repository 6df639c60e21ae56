import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { coreProviders } from './core/core.providers.js';
import { RedisLockEvents } from './core/events/redis-lock-events.js';
import { RedisConnection } from './core/redis/redis-connection.js';
import { TransactionSynchronizer } from './core/transaction/transaction-synchronizer.interface.js';
import { WithLockInterceptor } from './decorators/with-lock.interceptor.js';
import { delayQueueProviders } from './delay-queue/delay-queue.providers.js';
import { DelayQueueService } from './delay-queue/delay-queue.service.js';
import { TopicInspector } from './delay-queue/topic-inspector.js';
import { LockInspector } from './lock/lock-inspector.js';
import { LockSections } from './lock/lock-sections.js';
import { lockProviders } from './lock/lock.providers.js';
import { LockService } from './lock/lock.service.js';
import { ConfigurableRedisLockModule, REDIS_LOCK_MODULE_OPTIONS } from './redis-lock.module-definition.js';
import { LeaderElections } from './scheduling/leader-elections.js';
import { OneInstanceLeases } from './scheduling/one-instance-leases.js';
import { schedulingProviders } from './scheduling/scheduling.providers.js';

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
    ...coreProviders(REDIS_LOCK_MODULE_OPTIONS),
    ...lockProviders,
    ...delayQueueProviders,
    ...schedulingProviders,
    // Takes @WithRequestLock locks and answers lock timeouts with 409 Conflict over HTTP.
    { provide: APP_INTERCEPTOR, useClass: WithLockInterceptor },
  ],
  // Besides the public services: LockSections and OneInstanceLeases (run the @WithLock and
  // @OnOneInstance methods of importing modules' classes), RedisConnection (health indicator) and the inspectors (dashboard). They are not public API.
  exports: [
    LockService,
    LockSections,
    RedisLockEvents,
    TransactionSynchronizer,
    DelayQueueService,
    RedisConnection,
    LockInspector,
    TopicInspector,
    OneInstanceLeases,
    LeaderElections,
  ],
})
export class RedisLockModule extends ConfigurableRedisLockModule {}
