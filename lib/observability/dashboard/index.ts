/**
 * `nestjs-redis-lock/dashboard`: a web page (and its JSON API) showing locks, topics, jobs and
 * schedules. A separate entry point so that apps without the dashboard load none of it.
 *
 * @module nestjs-redis-lock/dashboard
 */
export { RedisLockDashboardModule } from './redis-lock-dashboard.module.js';
export type { DashboardAccessHook, RedisLockDashboardOptions } from './redis-lock-dashboard-options.interface.js';
export { DASHBOARD_ACTION_HEADER } from './redis-lock-dashboard.constants.js';
export type { DashboardRefusal } from './dashboard-forbidden.js';
export type {
  DashboardHistory,
  DashboardJob,
  DashboardJobDetail,
  DashboardJobList,
  DashboardJobState,
  DashboardLock,
  DashboardLockHolder,
  DashboardLockKind,
  DashboardLeaderElection,
  DashboardLeaseInRedis,
  DashboardLocks,
  DashboardMeta,
  DashboardOneInstanceLease,
  DashboardSample,
  DashboardSchedule,
  DashboardSchedules,
  DashboardScheduling,
  DashboardTopic,
  DashboardTopics,
} from './dashboard-api.interface.js';
