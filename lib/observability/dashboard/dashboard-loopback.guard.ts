import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { dashboardForbidden } from './dashboard-forbidden.js';
import { foreignHostRefusal, forwardingHeaderOf, remoteClientRefusal } from './dashboard-request-policy.js';

/**
 * Serves loopback clients only: what the dashboard does when nobody said who may use it (no
 * `guards`, no `canActivate`, no `allowRemote: true`). A loopback client is one whose TCP peer is
 * loopback, with no sign of an untrusted proxy, that addressed a loopback name (`Host`), so a page
 * that rebinds its name to 127.0.0.1 is refused too. Works with Express and Fastify requests.
 */
export class DashboardLoopbackGuard implements CanActivate {
  constructor(private readonly allowedOrigins: ReadonlySet<string>) {}

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest();
    const headers: Record<string, unknown> = request?.headers ?? {};
    const refusal = remoteClientRefusal({
      socketAddress: request?.socket?.remoteAddress ?? request?.raw?.socket?.remoteAddress,
      ip: typeof request?.ip === 'string' ? request.ip : undefined,
      ips: Array.isArray(request?.ips) ? request.ips : undefined,
      forwardedBy: forwardingHeaderOf(headers),
    });
    if (refusal !== undefined) {
      throw dashboardForbidden(
        'DASHBOARD_REMOTE_CLIENT',
        `The dashboard serves loopback clients only, and ${refusal}. To serve other clients, protect it with ` +
          'RedisLockDashboardModule.forRoot({ guards }) or ({ canActivate }), or set ({ allowRemote: true }) if ' +
          'something in front of the application already restricts who reaches it.',
      );
    }
    const host = headers.host;
    const hostRefusal = foreignHostRefusal(Array.isArray(host) ? String(host[0]) : typeof host === 'string' ? host : undefined, this.allowedOrigins);
    if (hostRefusal !== undefined) {
      throw dashboardForbidden(
        'DASHBOARD_FOREIGN_HOST',
        `The dashboard serves loopback clients only, and ${hostRefusal}: a page can rebind its own name to ` +
          '127.0.0.1 (DNS rebinding). Open it as http://localhost:<port> or http://127.0.0.1:<port>; if a name of ' +
          'yours leads here (an SSH tunnel, a proxy), list its origin in RedisLockDashboardModule.forRoot({ allowedOrigins: ["http://ops.internal:8080"] }).',
      );
    }
    return true;
  }
}
