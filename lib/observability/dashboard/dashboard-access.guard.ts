import type { CanActivate, ExecutionContext } from '@nestjs/common';
import type { DashboardAccessHook } from './redis-lock-dashboard-options.interface.js';

/** Turns the `canActivate(request)` option into a guard. */
export class DashboardAccessGuard implements CanActivate {
  constructor(private readonly hook: DashboardAccessHook) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    return (await this.hook(context.switchToHttp().getRequest(), context)) === true;
  }
}
