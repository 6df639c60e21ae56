import { Module, type DynamicModule } from '@nestjs/common';
import { DiscoveryModule, ModuleRef } from '@nestjs/core';
import { InvalidOptionsError } from '../../errors/invalid-options.error.js';
import { RedisKeySpace } from '../../keys/redis-key-space.js';
import type { RedisLockConfig } from '../../options/redis-lock-config.js';
import { RedisConnection } from '../../redis/redis-connection.js';
import { TopicShards } from '../../delay-queue/topic-shards.js';
import { REDIS_LOCK_CONFIG } from '../../redis-lock.constants.js';
import { createDashboardController } from './dashboard.controller.js';
import { DashboardHistory } from './dashboard-history.js';
import { DashboardLocks } from './dashboard-locks.js';
import { DashboardQueue } from './dashboard-queue.js';
import { DashboardTopicRegistry } from './dashboard-topics.js';
import { DASHBOARD_KEY_SPACE, DASHBOARD_TOPIC_SHARDS, REDIS_LOCK_DASHBOARD_OPTIONS } from './redis-lock-dashboard.constants.js';
import type { RedisLockDashboardOptions } from './redis-lock-dashboard-options.interface.js';
import { resolveDashboardOptions } from './resolve-dashboard-options.js';

/**
 * A small web dashboard for locks and delayed jobs: one self-contained page (no build step, no
 * CDN) with a JSON API beside it. It lists topics with their counts; due, scheduled, running and
 * dead jobs with their payloads (retry or delete a dead job, cancel a waiting one); the locks held
 * now with owner, fencing token and remaining lease; and plots of backlog and lateness over the last
 * minutes. Needs `RedisLockModule` registered with `isGlobal: true`.
 *
 * Safe by default, because it shows payloads and can change the queue: with no options it is
 * read-only, serves loopback clients only (403 for any other address, including clients forwarded
 * by a reverse proxy), and refuses API requests sent by pages of other origins whatever the
 * application's CORS setting. To open it up, protect it with `guards` (Nest guards) or a
 * `canActivate(request)` hook, which lets remote clients through them (or `allowRemote: true` when
 * something in front of the application already restricts access), and set `readOnly: false` (or a
 * function of the request) for people who may retry, delete and cancel.
 *
 * @example
 * \@Module({
 *   imports: [
 *     RedisLockModule.forRoot({ redis: process.env.REDIS_URL, isGlobal: true }),
 *     RedisLockDashboardModule.forRoot({
 *       path: '/admin/locks',
 *       guards: [AdminGuard],
 *       readOnly: (req) => !req.user?.roles?.includes('ops'),
 *     }),
 *   ],
 * })
 * export class AppModule {}
 * // then open http://localhost:3000/admin/locks
 */
@Module({})
export class RedisLockDashboardModule {
  static forRoot(options: RedisLockDashboardOptions = {}): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    return {
      module: RedisLockDashboardModule,
      imports: [DiscoveryModule],
      controllers: [createDashboardController(resolved)],
      providers: [
        { provide: REDIS_LOCK_DASHBOARD_OPTIONS, useValue: resolved },
        // RedisConnection is injected only to be created after the configuration it depends on.
        { provide: DASHBOARD_KEY_SPACE, useFactory: keySpaceOfApplication, inject: [ModuleRef, RedisConnection] },
        {
          provide: DASHBOARD_TOPIC_SHARDS,
          useFactory: (moduleRef: ModuleRef, keySpace: RedisKeySpace) =>
            new TopicShards(keySpace, configOfApplication(moduleRef).delayQueue.topics),
          inject: [ModuleRef, DASHBOARD_KEY_SPACE],
        },
        DashboardTopicRegistry,
        DashboardQueue,
        DashboardLocks,
        DashboardHistory,
      ],
    };
  }
}

function keySpaceOfApplication(moduleRef: ModuleRef): RedisKeySpace {
  return new RedisKeySpace(configOfApplication(moduleRef).keyPrefix);
}

/** The key prefix and topic shards are part of RedisLockModule's resolved configuration, which it does not export. */
function configOfApplication(moduleRef: ModuleRef): RedisLockConfig {
  let config: RedisLockConfig | undefined;
  try {
    config = moduleRef.get<RedisLockConfig>(REDIS_LOCK_CONFIG, { strict: false });
  } catch {
    config = undefined;
  }
  if (!config) {
    throw new InvalidOptionsError(
      'RedisLockDashboardModule',
      'it needs RedisLockModule in the same application, registered with isGlobal: true (RedisLockModule.forRoot({ ..., isGlobal: true }))',
    );
  }
  return config;
}
