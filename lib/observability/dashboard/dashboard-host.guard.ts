import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { dashboardForbidden } from './dashboard-forbidden.js';
import { foreignHostRefusal, type HostAllowList } from './dashboard-request-policy.js';

/**
 * Answers only the `Host`s the dashboard is reached by: loopback names and those listed in
 * `allowedHosts` and `allowedOrigins` (see `foreignHostRefusal`), so a page that rebinds its own
 * name to the dashboard's address (DNS rebinding) is refused however the request got here. Runs on
 * every route, the page included, whenever the Host is checked (see `ResolvedDashboardOptions.hosts`).
 */
export class DashboardHostGuard implements CanActivate {
  constructor(
    private readonly allowed: HostAllowList,
    /** True while loopback clients only are served: the advice differs. */
    private readonly loopbackOnly: boolean,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const host = context.switchToHttp().getRequest()?.headers?.host;
    const refusal = foreignHostRefusal(Array.isArray(host) ? String(host[0]) : typeof host === 'string' ? host : undefined, this.allowed);
    if (refusal === undefined) return true;
    const advice = this.loopbackOnly
      ? 'Open it as http://localhost:<port> or http://127.0.0.1:<port>; if a name of yours leads here (an SSH tunnel, a proxy), '
      : 'If this name is yours, ';
    throw dashboardForbidden(
      'DASHBOARD_FOREIGN_HOST',
      `The dashboard answers the names it is reached by only, and ${refusal}: a page can rebind its own name to this ` +
        `server's address (DNS rebinding). ${advice}list it in RedisLockDashboardModule.forRoot({ allowedHosts: ["ops.internal"] }) ` +
        '(or its origin in allowedOrigins).',
    );
  }
}
