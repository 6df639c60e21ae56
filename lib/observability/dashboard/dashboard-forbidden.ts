import { ForbiddenException } from '@nestjs/common';

/** Stable `code` of each reason the dashboard answers 403, in the JSON body next to the message. */
type DashboardRefusal =
  /** Not a loopback client, and neither a guard nor `allowRemote: true` was configured. */
  | 'DASHBOARD_REMOTE_CLIENT'
  /** Loopback-only, and `Host` is neither a loopback name nor the host of an `allowedOrigins` entry (DNS rebinding). */
  | 'DASHBOARD_FOREIGN_HOST'
  /** Sent by a page of another origin (`Origin`, `Sec-Fetch-Site`), not listed in `allowedOrigins`. */
  | 'DASHBOARD_CROSS_ORIGIN'
  /** A retry, delete or cancel while the dashboard is read-only (the default). */
  | 'DASHBOARD_READ_ONLY'
  /** A retry, delete or cancel without the `x-redis-lock-dashboard` header. */
  | 'DASHBOARD_ACTION_HEADER_MISSING';

/** A 403 answer whose body carries a stable `code` and a message saying what to do. */
export function dashboardForbidden(code: DashboardRefusal, message: string): ForbiddenException {
  return new ForbiddenException({ statusCode: 403, error: 'Forbidden', code, message });
}
