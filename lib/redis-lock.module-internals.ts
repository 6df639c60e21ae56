import type { FactoryProvider } from '@nestjs/common';
import { RedisConnection } from './core/connection/redis-connection.js';
import { REDIS_LOCK_INTERNALS } from './core/redis-lock-internals.token.js';
import { DecoratorLockRunner } from './decorators/decorator-lock-runner.js';
import type { DecoratorServices } from './decorators/wrap-provider-method.js';
import { JobCommands } from './delay-queue/job-commands.js';
import { TopicDirectory } from './delay-queue/topic-directory.js';
import { TopicInspector } from './delay-queue/topic-inspector.js';
import { LockInspector } from './lock/lock-inspector.js';
import { OneInstanceLeases } from './scheduling/one-instance-leases.js';

/** What `REDIS_LOCK_INTERNALS` holds: the decorators' services, and what the add-ons read. */
export interface RedisLockInternals extends DecoratorServices {
  readonly connection: RedisConnection;
  readonly lockInspector: LockInspector;
  readonly topicInspector: TopicInspector;
  readonly topicDirectory: TopicDirectory;
  /** The operator's actions on jobs (delete a dead letter, cancel a waiting job). */
  readonly jobCommands: JobCommands;
}

/** The provider of `REDIS_LOCK_INTERNALS` in `RedisLockModule`. */
export const redisLockInternalsProvider: FactoryProvider<RedisLockInternals> = {
  provide: REDIS_LOCK_INTERNALS,
  useFactory: (
    connection: RedisConnection,
    lockInspector: LockInspector,
    topicInspector: TopicInspector,
    topicDirectory: TopicDirectory,
    jobCommands: JobCommands,
    lockRunner: DecoratorLockRunner,
    oneInstanceLeases: OneInstanceLeases,
  ) => ({ connection, lockInspector, topicInspector, topicDirectory, jobCommands, lockRunner, oneInstanceLeases }),
  inject: [RedisConnection, LockInspector, TopicInspector, TopicDirectory, JobCommands, DecoratorLockRunner, OneInstanceLeases],
};
