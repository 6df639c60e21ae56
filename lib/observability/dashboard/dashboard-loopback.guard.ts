import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { dashboardForbidden } from './dashboard-forbidden.js';
import { forwardingHeaderOf, remoteClientRefusal } from './dashboard-request-policy.js';

/**
 * Serves loopback clients only: what the dashboard does when nobody said who may use it (no
 * `guards`, no `canActivate`, no `allowRemote: true`). A loopback client is one whose TCP peer is
 * loopback, with no sign of an untrusted proxy. `DashboardHostGuard`, which runs next, refuses a
 * page that rebinds its name to 127.0.0.1. Works with Express and Fastify requests.
 */
export class DashboardLoopbackGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest();
    const headers: Record<string, unknown> = request?.headers ?? {};
    // A Fastify request wraps Node's request in `raw`, and its `ips` starts with the socket's address.
    const fastify = request?.raw !== undefined && request.raw !== request;
    const refusal = remoteClientRefusal({
      socketAddress: request?.socket?.remoteAddress ?? request?.raw?.socket?.remoteAddress,
      ip: typeof request?.ip === 'string' ? request.ip : undefined,
      ips: Array.isArray(request?.ips) ? request.ips : undefined,
      ipsStartWithSocket: fastify,
      forwardedFor: headers['x-forwarded-for'] !== undefined,
      forwardedBy: forwardingHeaderOf(headers),
      forwardedOtherwise: forwardingHeaderOf(headers, true),
    });
    if (refusal !== undefined) {
      throw dashboardForbidden(
        'DASHBOARD_REMOTE_CLIENT',
        `The dashboard serves loopback clients only, and ${refusal}. To serve other clients, protect it with ` +
          'RedisLockDashboardModule.forRoot({ guards }) or ({ canActivate }), or set ({ allowRemote: true, allowedHosts: [...] }) ' +
          'if something in front of the application already restricts who reaches it.',
      );
    }
    return true;
  }
}
