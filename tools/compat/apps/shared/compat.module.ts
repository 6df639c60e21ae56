/**
 * What a user of nestjs-redis-lock adds to a fresh Nest application: the module, a locked HTTP route,
 * a delayed-job handler, and the observability add-ons (health, dashboard; metrics where the app has
 * prom-client, see metrics-subpath.ts), each imported from its published subpath.
 */
import { Controller, Get, Injectable, Module, Param, type DynamicModule, type Type } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { LockContext, OnDelayed, RedisLockModule, WithLock, type JobContext } from 'nestjs-redis-lock';
import { RedisLockDashboardModule } from 'nestjs-redis-lock/dashboard';
import { RedisLockHealthIndicator, RedisLockHealthModule } from 'nestjs-redis-lock/health';
import { deferred, type Deferred } from './check-list.js';

export const COMPAT_TOPIC = 'compat.job';

export interface CompatJobPayload {
  readonly orderId: string;
}

export interface Delivery {
  readonly payload: CompatJobPayload;
  readonly job: JobContext;
}

/** The `@OnDelayed` handler: hands every delivery to whoever waits for it. */
@Injectable()
export class CompatJobs {
  readonly delivered: Deferred<Delivery> = deferred<Delivery>();

  @OnDelayed(COMPAT_TOPIC)
  handle(payload: CompatJobPayload, job: JobContext): void {
    this.delivered.resolve({ payload, job });
  }
}

/** A route that holds a lock per order until the check opens `gate`: a second request meanwhile gets 409. */
@Controller('compat/orders')
export class CompatOrdersController {
  entered: Deferred<void> = deferred();
  gate: Deferred<void> = deferred();

  @Get(':id/capture')
  @WithLock('compat-order:<0>', { waitTimeout: 0 })
  async capture(@Param('id') id: string): Promise<{ id: string; fencingToken: string | null }> {
    this.entered.resolve();
    await this.gate.promise;
    return { id, fencingToken: LockContext.current()?.fencingToken ?? null };
  }
}

@Controller('compat')
export class CompatHealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redisLockHealth: RedisLockHealthIndicator,
  ) {}

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([
      () => this.redisLockHealth.pingCheck('redis', { timeout: 5_000 }),
      () => this.redisLockHealth.checkQueues('queues', { [COMPAT_TOPIC]: { maxDead: 0 } }, { timeout: 5_000 }),
    ]);
  }
}

export interface CompatModuleOptions {
  readonly redisUrl: string;
  readonly keyPrefix: string;
  /** More modules and controllers of the app's flavor (the metrics add-on). */
  readonly imports?: readonly (Type<unknown> | DynamicModule)[];
  readonly controllers?: readonly Type<unknown>[];
}

@Module({})
export class CompatModule {
  static forRoot(options: CompatModuleOptions): DynamicModule {
    return {
      module: CompatModule,
      imports: [
        RedisLockModule.forRoot({ redis: options.redisUrl, keyPrefix: options.keyPrefix, isGlobal: true }),
        RedisLockHealthModule,
        RedisLockDashboardModule.forRoot({ path: '/compat/dashboard' }),
        ...(options.imports ?? []),
      ],
      controllers: [CompatOrdersController, CompatHealthController, ...(options.controllers ?? [])],
      providers: [CompatJobs],
    };
  }
}
