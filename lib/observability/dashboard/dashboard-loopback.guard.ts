import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { dashboardForbidden } from './dashboard-forbidden.js';
import { FORWARDING_HEADERS, remoteClientRefusal } from './dashboard-request-policy.js';

/**
 * Serves loopback clients only: what the dashboard does when nobody said who may use it (no
 * `guards`, no `canActivate`, no `allowRemote: true`). Works with Express and Fastify requests.
 */
export class DashboardLoopbackGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest();
    const headers: Record<string, unknown> = request?.headers ?? {};
    const refusal = remoteClientRefusal({
      socketAddress: request?.socket?.remoteAddress ?? request?.raw?.socket?.remoteAddress,
      ip: typeof request?.ip === 'string' ? request.ip : undefined,
      ips: Array.isArray(request?.ips) ? request.ips : undefined,
      forwarded: FORWARDING_HEADERS.some((name) => headers[name] !== undefined),
    });
    if (refusal === undefined) return true;
    throw dashboardForbidden(
      'DASHBOARD_REMOTE_CLIENT',
      `The dashboard serves loopback clients only, and ${refusal}. To serve other clients, protect it with ` +
        'RedisLockDashboardModule.forRoot({ guards }) or ({ canActivate }), or set ({ allowRemote: true }) if ' +
        'something in front of the application already restricts who reaches it.',
    );
  }
}
