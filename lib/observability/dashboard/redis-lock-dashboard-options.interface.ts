import type { CanActivate, ExecutionContext, Type } from '@nestjs/common';

/**
 * Decides per request whether the dashboard may be used; the request is the platform's own object
 * (an Express `Request` by default). Return false to answer 403 Forbidden.
 *
 * @inline
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's own request type (Express, Fastify)
export type DashboardAccessHook = (request: any, context: ExecutionContext) => boolean | Promise<boolean>;

/**
 * Options of `RedisLockDashboardModule.forRoot()`. With none, the dashboard is safe to mount
 * anywhere: read-only, served to loopback clients only, refusing pages of other origins, and each
 * refresh reads bounded previews of payloads from Redis, never whole payloads.
 */
export interface RedisLockDashboardOptions {
  /**
   * Where the page is served; the JSON API lives under `<path>/api`. Default `'/_locks'`. An
   * application's global prefix is prepended as for any controller.
   */
  path?: string;
  /**
   * Refuses retry, delete and cancel with 403 (server-side) and hides their buttons. A function
   * decides per request, e.g. `(req) => !req.user?.roles.includes('ops')`. **Default true**: the
   * dashboard changes nothing until `readOnly: false` (or a function) is set explicitly.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's own request type (Express, Fastify)
  readOnly?: boolean | ((request: any) => boolean | Promise<boolean>);
  /**
   * Nest guards run before every dashboard route (the page and the API): guard classes (created by
   * Nest, so they may inject global providers) or instances. A guard returning false answers 403.
   * Giving guards (or `canActivate`) serves clients on other hosts too, those the guards admit;
   * set `allowRemote: false` to keep loopback-only as well.
   */
  guards?: Array<Type<CanActivate> | CanActivate>;
  /** A shorter way to protect the dashboard than a guard; runs after `guards`. Like `guards`, it lifts the loopback-only default. */
  canActivate?: DashboardAccessHook;
  /**
   * Serve clients whose address is not loopback. **Default: false when neither `guards` nor
   * `canActivate` is given, true when one is** (you then decide who may use it). While false, a
   * request is served only when all of these hold, else refused with 403:
   *
   * - its TCP peer is 127.0.0.0/8 or ::1 (`code: 'DASHBOARD_REMOTE_CLIENT'`);
   * - it carries no sign of a proxy (`Via`, `Forwarded`, any `X-Forwarded-*`, `X-Real-IP`, CDN
   *   client headers such as `CF-Connecting-IP`, `True-Client-IP`, `Fastly-Client-IP`), unless the
   *   application trusts the proxy (Express `app.set('trust proxy', 'loopback')`, Fastify
   *   `trustProxy`) and the proxy named a loopback client in `X-Forwarded-For`
   *   (`DASHBOARD_REMOTE_CLIENT`): behind a proxy on the same host every client's peer is loopback;
   * - its `Host` is `localhost`, a 127.0.0.0/8 address or `[::1]` (any port), or one listed in
   *   `allowedHosts` or `allowedOrigins` (`code: 'DASHBOARD_FOREIGN_HOST'`): a web page can rebind
   *   its own name to 127.0.0.1 and reach a dashboard on the operator's machine (DNS rebinding).
   *
   * While true, the `Host` check stays whenever `allowedHosts` or `allowedOrigins` lists a name. So
   * `allowRemote: true` without `guards` nor `canActivate` needs the names the dashboard is reached
   * by (`allowedHosts: ['ops.example.com']`), or `forRoot` fails with `InvalidOptionsError`: set it
   * only when something in front of the application already restricts who reaches it, and prefer a
   * guard that checks a credential. With guards and no list, any `Host` is answered (a warning is
   * logged at bootstrap): the guards must check a credential, not the client's address.
   * See docs/observability.md, "Security".
   */
  allowRemote?: boolean;
  /**
   * The names the dashboard is reached by, besides `localhost`, 127.0.0.0/8 and `[::1]` (always
   * answered): a request whose `Host` is another name is refused with 403 (`code:
   * 'DASHBOARD_FOREIGN_HOST'`), which stops a page that rebinds its own name to the dashboard's
   * address (DNS rebinding). Host names without port (any port matches): `'ops.example.com'`,
   * `'10.0.0.5'`, `'[2001:db8::1]'`, or `'.example.com'` for `example.com` and every name under it.
   * The hosts of `allowedOrigins` entries are answered too.
   *
   * Needed with `allowRemote: true` when no guard is given; with guards, recommended (without it
   * any `Host` is answered and a warning is logged at bootstrap). `true` answers any `Host` and
   * silences that warning: only with `allowRemote` and guards that check a credential, or a proxy in
   * front that refuses unknown names; on a loopback-only dashboard it is refused at `forRoot` (a page
   * that rebinds its name to 127.0.0.1 would reach it). Anything else fails at `forRoot` with
   * `InvalidOptionsError`. Default none.
   */
  allowedHosts?: string[] | true;
  /**
   * Origins (`'https://ops.example.com'`) whose pages may call the API, besides the dashboard's
   * own. Every API request (reads and actions) sent by a browser for a page of another origin is
   * refused with 403 (`code: 'DASHBOARD_CROSS_ORIGIN'`): an `Origin` header that is not the
   * request's own host (`Host` header) nor listed here, or `Sec-Fetch-Site` other than
   * 'same-origin' or 'none'. This holds whatever the application's CORS setting, so
   * `app.enableCors({ origin: true, credentials: true })` does not open the dashboard to other
   * sites. A proxy that rewrites `Host` makes the dashboard's own page look foreign: list the public
   * origin here. An origin listed here is also a `Host` the dashboard answers (see `allowedHosts`),
   * e.g. `'http://ops.internal:8080'` for a tunnel reached by that name. Default none.
   */
  allowedOrigins?: string[];
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
  history?: {
    /** Sampling interval in ms. Default 5000; 0 turns the sampling off. */
    sampleMs?: number;
    /** How far back the plots reach, in ms. Default 600000. */
    windowMs?: number;
  };
  /** Most locks listed (and most keys of each kind found by one SCAN pass). Default 500. */
  maxLocks?: number;
  /** How long topics found by `SCAN` are remembered before the keyspace is scanned again, in ms. Default 30000. */
  discoveryIntervalMs?: number;
}
