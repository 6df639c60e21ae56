import type { CanActivate, ExecutionContext, Type } from '@nestjs/common';

/**
 * Decides per request whether the dashboard may be used; the request is the platform's own object
 * (an Express `Request` by default). Return false to answer 403 Forbidden.
 */
export type DashboardAccessHook = (request: any, context: ExecutionContext) => boolean | Promise<boolean>;

/** Options of `RedisLockDashboardModule.forRoot()`. */
export interface RedisLockDashboardOptions {
  /**
   * Where the page is served; the JSON API lives under `<path>/api`. Default `'/_locks'`. An
   * application's global prefix is prepended as for any controller.
   */
  path?: string;
  /**
   * Refuses retry, delete and cancel with 403 (server-side) and hides their buttons. A function
   * decides per request, e.g. `(req) => !req.user?.roles.includes('ops')`. Default false.
   */
  readOnly?: boolean | ((request: any) => boolean | Promise<boolean>);
  /**
   * Nest guards run before every dashboard route (the page and the API): guard classes (created by
   * Nest, so they may inject global providers) or instances. A guard returning false answers 403.
   */
  guards?: Array<Type<CanActivate> | CanActivate>;
  /** A shorter way to protect the dashboard than a guard; runs after `guards`. */
  canActivate?: DashboardAccessHook;
  /**
   * The topics to show. Default: discovered, i.e. the topics of `@OnDelayed` handlers in this
   * application, those this process scheduled or ran, and those found in Redis by `SCAN`.
   */
  topics?: string[];
  /** How often the page refreshes itself, in ms. Default 3000; at least 500. */
  refreshMs?: number;
  /**
   * How often queue depths are sampled in memory for the plots, in ms (default 5000), and how far
   * back the plots reach (default 600000, ten minutes). `sampleMs: 0` turns the sampling off.
   */
  history?: { sampleMs?: number; windowMs?: number };
  /** Most locks listed (and most keys of each kind found by one SCAN pass). Default 500. */
  maxLocks?: number;
  /** How long topics found by `SCAN` are remembered before the keyspace is scanned again, in ms. Default 30000. */
  discoveryIntervalMs?: number;
}
