import {
  BadRequestException,
  Controller,
  Get,
  Header,
  Headers,
  HttpCode,
  Inject,
  Optional,
  NotFoundException,
  ConflictException,
  Param,
  Post,
  Query,
  Req,
  SetMetadata,
  UseGuards,
  UseInterceptors,
  VERSION_NEUTRAL,
  type CanActivate,
  type Type,
} from '@nestjs/common';
import { LISTED_JOB_STATES } from '../../delay-queue/listed-job.js';
import { LockInspector } from '../../lock/lock-inspector.js';
import type {
  DashboardHistory as DashboardHistoryReply,
  DashboardJobDetail,
  DashboardJobList,
  DashboardJobState,
  DashboardLocks as DashboardLockList,
  DashboardMeta,
  DashboardSchedules,
  DashboardScheduling as DashboardSchedulingReply,
  DashboardTopics as DashboardTopicList,
} from './dashboard-api.interface.js';
import { DashboardAccessGuard } from './dashboard-access.guard.js';
import { DashboardErrorsInterceptor } from './dashboard-errors.interceptor.js';
import { dashboardForbidden } from './dashboard-forbidden.js';
import { DashboardHostGuard } from './dashboard-host.guard.js';
import { DashboardLoopbackGuard } from './dashboard-loopback.guard.js';
import { DASHBOARD_NAVIGATION_ROUTE, DashboardOriginGuard } from './dashboard-origin.guard.js';
import { DashboardHistory } from './dashboard-history.js';
import { DASHBOARD_PAGE_CSP, DASHBOARD_PAGE_HTML } from './dashboard-page.js';
import { DashboardQueue } from './dashboard-queue.js';
import { DashboardScheduling } from './dashboard-scheduling.js';
import { DASHBOARD_ACTION_HEADER, MAX_JOB_LIST_LIMIT, REDIS_LOCK_DASHBOARD_OPTIONS } from './redis-lock-dashboard.constants.js';
import type { ResolvedDashboardOptions } from './resolve-dashboard-options.js';
import { requireRedisLockModule } from '../../core/errors/redis-lock-module-not-visible.error.js';
import { REDIS_LOCK_INTERNALS } from '../../core/redis-lock-internals.token.js';
import type { RedisLockInternals } from '../../redis-lock.module-internals.js';

/**
 * The page and its JSON API. `forRoot` subclasses it with `@Controller(path)` and the user's guards,
 * so each registration is mounted where it was asked, behind its own guards, and takes part in the
 * application's global prefix, guards, interceptors and filters like any controller.
 */
@UseInterceptors(DashboardErrorsInterceptor)
class DashboardController {
  constructor(
    @Inject(REDIS_LOCK_DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    private readonly queue: DashboardQueue,
    // Optional only so that a RedisLockModule the dashboard cannot see is reported by name (below).
    @Optional() @Inject(REDIS_LOCK_INTERNALS) internals: RedisLockInternals | undefined,
    private readonly history: DashboardHistory,
    private readonly scheduling: DashboardScheduling,
  ) {
    requireRedisLockModule('RedisLockDashboardModule', { LockInspector: internals?.lockInspector });
    this.locks = internals!.lockInspector;
  }

  private readonly locks: LockInspector;

  @Get()
  @SetMetadata(DASHBOARD_NAVIGATION_ROUTE, true)
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Content-Security-Policy', DASHBOARD_PAGE_CSP)
  @Header('Cache-Control', 'no-store')
  @Header('X-Frame-Options', 'DENY')
  @Header('Referrer-Policy', 'no-referrer')
  page(): string {
    return DASHBOARD_PAGE_HTML;
  }

  @Get('api/meta')
  @Header('Cache-Control', 'no-store')
  async meta(@Req() request: unknown): Promise<DashboardMeta> {
    return {
      readOnly: await this.isReadOnly(request),
      refreshMs: this.options.refreshMs,
      keyPrefix: this.locks.keyPrefix,
      sampleMs: this.options.sampleMs,
      windowMs: this.options.windowMs,
      actionHeader: DASHBOARD_ACTION_HEADER,
    };
  }

  @Get('api/topics')
  @Header('Cache-Control', 'no-store')
  topics(): Promise<DashboardTopicList> {
    return this.queue.listTopics();
  }

  @Get('api/topics/:topic/jobs')
  @Header('Cache-Control', 'no-store')
  jobs(@Param('topic') topic: string, @Query('state') state?: string, @Query('limit') limit?: string): Promise<DashboardJobList> {
    return this.queue.listJobs(topic, parseState(state), parseLimit(limit));
  }

  @Get('api/topics/:topic/schedules')
  @Header('Cache-Control', 'no-store')
  schedules(@Param('topic') topic: string): Promise<DashboardSchedules> {
    return this.scheduling.schedules(topic);
  }

  @Get('api/topics/:topic/jobs/:id')
  @Header('Cache-Control', 'no-store')
  async job(@Param('topic') topic: string, @Param('id') id: string): Promise<DashboardJobDetail> {
    const job = await this.queue.getJob(topic, id);
    if (!job)
      throw new NotFoundException(`Topic ${JSON.stringify(topic)} has no job ${JSON.stringify(id)} (done, cancelled or never scheduled).`);
    return job;
  }

  @Post('api/topics/:topic/jobs/:id/retry')
  @HttpCode(200)
  async retry(
    @Req() request: unknown,
    @Headers(DASHBOARD_ACTION_HEADER) actionHeader: string | undefined,
    @Param('topic') topic: string,
    @Param('id') id: string,
  ): Promise<{ retried: true }> {
    await this.assertMayWrite(request, actionHeader, 'retry a dead job');
    if (!(await this.queue.retryDead(topic, id))) {
      throw new NotFoundException(
        `Job ${JSON.stringify(id)} of topic ${JSON.stringify(topic)} is not a dead letter (retried or deleted meanwhile?).`,
      );
    }
    return { retried: true };
  }

  @Post('api/topics/:topic/jobs/:id/delete')
  @HttpCode(200)
  async deleteDead(
    @Req() request: unknown,
    @Headers(DASHBOARD_ACTION_HEADER) actionHeader: string | undefined,
    @Param('topic') topic: string,
    @Param('id') id: string,
  ): Promise<{ deleted: true }> {
    await this.assertMayWrite(request, actionHeader, 'delete a dead job');
    if (!(await this.queue.deleteDead(topic, id))) {
      throw new NotFoundException(
        `Job ${JSON.stringify(id)} of topic ${JSON.stringify(topic)} is not a dead letter (retried or deleted meanwhile?).`,
      );
    }
    return { deleted: true };
  }

  @Post('api/topics/:topic/jobs/:id/cancel')
  @HttpCode(200)
  async cancel(
    @Req() request: unknown,
    @Headers(DASHBOARD_ACTION_HEADER) actionHeader: string | undefined,
    @Param('topic') topic: string,
    @Param('id') id: string,
  ): Promise<{ cancelled: true }> {
    await this.assertMayWrite(request, actionHeader, 'cancel a job');
    const outcome = await this.queue.cancelWaiting(topic, id);
    if (outcome === 'running') {
      throw new ConflictException(
        `Job ${JSON.stringify(id)} of topic ${JSON.stringify(topic)} is running; only a waiting job can be cancelled here.`,
      );
    }
    if (outcome === 'not-waiting') {
      throw new NotFoundException(
        `Job ${JSON.stringify(id)} of topic ${JSON.stringify(topic)} is not waiting (done, dead, cancelled or never scheduled).`,
      );
    }
    return { cancelled: true };
  }

  @Post('api/topics/:topic/retry-dead')
  @HttpCode(200)
  async retryAllDead(
    @Req() request: unknown,
    @Headers(DASHBOARD_ACTION_HEADER) actionHeader: string | undefined,
    @Param('topic') topic: string,
  ): Promise<{ retried: number }> {
    await this.assertMayWrite(request, actionHeader, 'retry dead jobs');
    return { retried: await this.queue.retryAllDead(topic) };
  }

  @Post('api/topics/:topic/drain')
  @HttpCode(200)
  async drain(
    @Req() request: unknown,
    @Headers(DASHBOARD_ACTION_HEADER) actionHeader: string | undefined,
    @Param('topic') topic: string,
  ): Promise<{ removed: number }> {
    await this.assertMayWrite(request, actionHeader, 'drain a topic');
    return { removed: await this.queue.drain(topic) };
  }

  @Post('api/topics/:topic/clean/:state')
  @HttpCode(200)
  async clean(
    @Req() request: unknown,
    @Headers(DASHBOARD_ACTION_HEADER) actionHeader: string | undefined,
    @Param('topic') topic: string,
    @Param('state') state: string,
  ): Promise<{ removed: number }> {
    await this.assertMayWrite(request, actionHeader, 'clean a topic');
    if (state !== 'dead' && state !== 'completed') {
      throw new BadRequestException(`Cannot clean ${JSON.stringify(state)} jobs; use dead or completed.`);
    }
    return { removed: await this.queue.clean(topic, state) };
  }

  @Post('api/topics/:topic/pause')
  @HttpCode(200)
  async pause(
    @Req() request: unknown,
    @Headers(DASHBOARD_ACTION_HEADER) actionHeader: string | undefined,
    @Param('topic') topic: string,
  ): Promise<{ changed: boolean }> {
    await this.assertMayWrite(request, actionHeader, 'pause a topic');
    return { changed: await this.queue.setPaused(topic, true) };
  }

  @Post('api/topics/:topic/resume')
  @HttpCode(200)
  async resume(
    @Req() request: unknown,
    @Headers(DASHBOARD_ACTION_HEADER) actionHeader: string | undefined,
    @Param('topic') topic: string,
  ): Promise<{ changed: boolean }> {
    await this.assertMayWrite(request, actionHeader, 'resume a topic');
    return { changed: await this.queue.setPaused(topic, false) };
  }

  @Get('api/locks')
  @Header('Cache-Control', 'no-store')
  heldLocks(): Promise<DashboardLockList> {
    return this.locks.heldLocks(this.options.maxLocks);
  }

  @Get('api/scheduling')
  @Header('Cache-Control', 'no-store')
  leasesAndLeaders(): Promise<DashboardSchedulingReply> {
    return this.scheduling.scheduling();
  }

  @Get('api/history')
  @Header('Cache-Control', 'no-store')
  samples(): DashboardHistoryReply {
    return this.history.history();
  }

  private async isReadOnly(request: unknown): Promise<boolean> {
    const { readOnly } = this.options;
    return typeof readOnly === 'function' ? (await readOnly(request)) !== false : readOnly;
  }

  private async assertMayWrite(request: unknown, actionHeader: string | undefined, action: string): Promise<void> {
    if (await this.isReadOnly(request)) {
      throw dashboardForbidden(
        'DASHBOARD_READ_ONLY',
        `The dashboard is read-only: it may not ${action}. Read-only is the default; to allow actions, set ` +
          'RedisLockDashboardModule.forRoot({ readOnly: false }) or a function (request) => boolean, behind your own guards.',
      );
    }
    if (actionHeader === undefined) {
      throw dashboardForbidden(
        'DASHBOARD_ACTION_HEADER_MISSING',
        `To ${action}, send the header "${DASHBOARD_ACTION_HEADER}: 1" (it keeps other sites from posting ` +
          `here through a signed-in browser).`,
      );
    }
  }
}

function parseState(state: string | undefined): DashboardJobState {
  if (state === undefined) return 'due';
  if (!(LISTED_JOB_STATES as readonly string[]).includes(state)) {
    throw new BadRequestException(`Unknown job state ${JSON.stringify(state)}; use one of ${LISTED_JOB_STATES.join(', ')}.`);
  }
  return state as DashboardJobState;
}

function parseLimit(limit: string | undefined): number {
  if (limit === undefined) return 50;
  const n = Number(limit);
  if (!Number.isInteger(n) || n < 1 || n > MAX_JOB_LIST_LIMIT) {
    throw new BadRequestException(`Invalid limit ${JSON.stringify(limit)}; use a whole number from 1 to ${MAX_JOB_LIST_LIMIT}.`);
  }
  return n;
}

/**
 * A controller class mounted at `options.path`, behind, in this order: the loopback check (unless
 * `allowRemote`), the `Host` check (unless `options.hosts` is undefined), the cross-origin check of
 * API routes, `options.guards` and `options.canActivate`.
 */
export function createDashboardController(options: ResolvedDashboardOptions): Type<DashboardController> {
  class RedisLockDashboardController extends DashboardController {}
  const guards: Array<Type<CanActivate> | CanActivate> = [];
  if (!options.allowRemote) guards.push(new DashboardLoopbackGuard());
  if (options.hosts) guards.push(new DashboardHostGuard(options.hosts, !options.allowRemote));
  guards.push(new DashboardOriginGuard(options.allowedOrigins), ...options.guards);
  if (options.canActivate) guards.push(new DashboardAccessGuard(options.canActivate));
  UseGuards(...guards)(RedisLockDashboardController);
  Controller({ path: options.path, version: VERSION_NEUTRAL })(RedisLockDashboardController);
  return RedisLockDashboardController;
}
