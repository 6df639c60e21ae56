/**
 * `nestjs-redis-lock/dashboard`: a web page (and its JSON API) showing locks, topics, jobs and
 * schedules. A separate entry point so that apps without the dashboard load none of it.
 *
 * @module nestjs-redis-lock/dashboard
 */
export { RedisLockDashboardModule } from './redis-lock-dashboard.module.js';
export type { DashboardAccessHook, RedisLockDashboardOptions } from './redis-lock-dashboard-options.interface.js';
