import { Inject, Logger, Module, type DynamicModule, type OnModuleInit } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { createDashboardController } from './dashboard.controller.js';
import { DashboardHistory } from './dashboard-history.js';
import { DashboardQueue } from './dashboard-queue.js';
import { DashboardScheduling } from './dashboard-scheduling.js';
import { DashboardTopicRegistry } from './dashboard-topics.js';
import { REDIS_LOCK_DASHBOARD_OPTIONS } from './redis-lock-dashboard.constants.js';
import type { RedisLockDashboardOptions } from './redis-lock-dashboard-options.interface.js';
import { resolveDashboardOptions, type ResolvedDashboardOptions } from './resolve-dashboard-options.js';

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
 *       allowedHosts: ['ops.example.com'],
 *       readOnly: (req) => !req.user?.roles?.includes('ops'),
 *     }),
 *   ],
 * })
 * export class AppModule {}
 * // then open http://localhost:3000/admin/locks
 */
@Module({})
export class RedisLockDashboardModule implements OnModuleInit {
  /** @internal Nest builds it from `forRoot`'s options. */
  constructor(@Inject(REDIS_LOCK_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions) {}

  /** Nest lifecycle hook: warns, once per registration, when guards serve remote clients at any `Host`. */
  onModuleInit(): void {
    if (!this.options.warnAnyHost) return;
    new Logger('RedisLockDashboard').warn(
      `The dashboard at /${this.options.path} serves remote clients its guards admit, at any Host: a page that rebinds its own ` +
        'name to this server (DNS rebinding) reaches it from the browser of whoever opens that page, with nothing but your guards ' +
        "in its way. Make sure they check a credential (a session cookie, a token), not the client's address, and list the names " +
        'the dashboard is reached by in RedisLockDashboardModule.forRoot({ allowedHosts: ["ops.example.com"] }) ' +
        '(allowedHosts: true answers any Host without this warning).',
    );
  }

  /**
   * Serves the dashboard page and its API under `options.path` (default `/_locks`).
   *
   * @throws InvalidOptionsError for an option it cannot use; the message names it
   */
  static forRoot(options: RedisLockDashboardOptions = {}): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    return {
      module: RedisLockDashboardModule,
      // DiscoveryModule: finds the application's @OnOneInstance methods for the scheduling panel.
      imports: [DiscoveryModule],
      controllers: [createDashboardController(resolved)],
      // DelayQueueService, LockService, RedisLockEvents and LeaderElections come from the global
      // RedisLockModule; the inspectors, the connection and the @OnOneInstance leases through its
      // REDIS_LOCK_INTERNALS (injected as is: re-providing those objects here would run their
      // lifecycle hooks once more).
      providers: [
        { provide: REDIS_LOCK_DASHBOARD_OPTIONS, useValue: resolved },
        DashboardTopicRegistry,
        DashboardQueue,
        DashboardHistory,
        DashboardScheduling,
      ],
    };
  }
}
