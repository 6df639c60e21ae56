import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { dashboardForbidden } from './dashboard-forbidden.js';
import { crossOriginRefusal } from './dashboard-request-policy.js';

/** Metadata marking the page route: a navigation from another site's link may open the page (it holds no data). */
export const DASHBOARD_NAVIGATION_ROUTE = 'redis-lock:dashboard-navigation-route';

/**
 * Refuses API requests sent by a page of another origin, reads as well as actions: an application
 * with a permissive credentialed CORS setting (`enableCors({ origin: true, credentials: true })`)
 * would otherwise let any site read payloads and send the action header with the operator's cookies.
 */
export class DashboardOriginGuard implements CanActivate {
  constructor(private readonly allowedOrigins: ReadonlySet<string>) {}

  canActivate(context: ExecutionContext): boolean {
    if (Reflect.getMetadata(DASHBOARD_NAVIGATION_ROUTE, context.getHandler()) === true) return true;
    const headers: Record<string, unknown> = context.switchToHttp().getRequest()?.headers ?? {};
    const refusal = crossOriginRefusal(
      { origin: header(headers.origin), secFetchSite: header(headers['sec-fetch-site']), host: header(headers.host) },
      this.allowedOrigins,
    );
    if (refusal === undefined) return true;
    throw dashboardForbidden(
      'DASHBOARD_CROSS_ORIGIN',
      `The dashboard refuses requests from other sites' pages, and ${refusal}. If that page is yours (an ops ` +
        'portal on another origin), list its origin in RedisLockDashboardModule.forRoot({ allowedOrigins: ["https://ops.example.com"] }).',
    );
  }
}

function header(value: unknown): string | undefined {
  if (Array.isArray(value)) return value.length > 0 ? String(value[0]) : undefined;
  return typeof value === 'string' ? value : undefined;
}
