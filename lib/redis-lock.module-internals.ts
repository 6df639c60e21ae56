import type { FactoryProvider } from '@nestjs/common';
import { RedisConnection } from './core/redis/redis-connection.js';
import { TopicInspector } from './delay-queue/topic-inspector.js';
import { LockInspector } from './lock/lock-inspector.js';

/**
 * For this package's add-ons (health, dashboard), not public API: the internal pieces of a
 * `RedisLockModule` they read, under one injection token that no entry point exports. The module
 * exports this token instead of the pieces, so an application sees only its public services.
 */
export const REDIS_LOCK_INTERNALS = Symbol('nestjs-redis-lock:internals');

/** What `REDIS_LOCK_INTERNALS` holds. For add-ons. */
interface RedisLockInternals {
  readonly connection: RedisConnection;
  readonly lockInspector: LockInspector;
  readonly topicInspector: TopicInspector;
}

/** The provider of `REDIS_LOCK_INTERNALS` in `RedisLockModule`. */
export const redisLockInternalsProvider: FactoryProvider<RedisLockInternals> = {
  provide: REDIS_LOCK_INTERNALS,
  useFactory: (connection: RedisConnection, lockInspector: LockInspector, topicInspector: TopicInspector) => ({
    connection,
    lockInspector,
    topicInspector,
  }),
  inject: [RedisConnection, LockInspector, TopicInspector],
};

/**
 * For an add-on module's `providers`: `RedisConnection`, `LockInspector` and `TopicInspector` as
 * providers of the add-on itself, taken from a `RedisLockModule` it can see, so its classes inject
 * them by class. Each is `undefined` when no `RedisLockModule` is visible: inject them `@Optional()`
 * and report that with `requireRedisLockModule`.
 */
export const redisLockInternalsForAddOns: FactoryProvider[] = [
  fromInternals(RedisConnection, (internals) => internals.connection),
  fromInternals(LockInspector, (internals) => internals.lockInspector),
  fromInternals(TopicInspector, (internals) => internals.topicInspector),
];

function fromInternals(token: Function, pick: (internals: RedisLockInternals) => unknown): FactoryProvider {
  return {
    provide: token,
    useFactory: (internals?: RedisLockInternals) => (internals ? pick(internals) : undefined),
    inject: [{ token: REDIS_LOCK_INTERNALS, optional: true }],
  };
}
