import type { CanActivate, Type } from '@nestjs/common';
import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import { assertValidTopic } from '../../core/keys/topic-name.js';
import { keysOf, refuseUnknownKeys } from '../../core/options/known-option-keys.js';
import { optionValidator as validate } from '../../core/options/option-validation.js';
import { canonicalHostEntry, canonicalOrigin, type HostAllowList } from './dashboard-request-policy.js';
import type { DashboardAccessHook, RedisLockDashboardOptions } from './redis-lock-dashboard-options.interface.js';

/** The dashboard options after validation, with every default filled in. Internal. */
export interface ResolvedDashboardOptions {
  /** Without leading or trailing slash, e.g. `_locks` or `admin/locks`. */
  readonly path: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the app's own request type (Express, Fastify)
  readonly readOnly: boolean | ((request: any) => boolean | Promise<boolean>);
  readonly guards: Array<Type<CanActivate> | CanActivate>;
  readonly canActivate?: DashboardAccessHook;
  /** False: only loopback clients are served (see `RedisLockDashboardOptions.allowRemote`). */
  readonly allowRemote: boolean;
  /** Canonical origins (`scheme://host[:port]`) allowed besides the dashboard's own. */
  readonly allowedOrigins: ReadonlySet<string>;
  /**
   * The `Host`s answered besides loopback names, or undefined when any `Host` is answered: only when
   * `allowedHosts: true`, or remote clients are served through guards and no host is listed
   * (`warnAnyHost`). Loopback-only always checks `Host`; so does `allowRemote` with no guard.
   */
  readonly hosts?: HostAllowList;
  /** True when guards serve remote clients at any `Host` because none was listed: warned once at bootstrap. */
  readonly warnAnyHost: boolean;
  readonly topics?: readonly string[];
  readonly refreshMs: number;
  readonly sampleMs: number;
  readonly windowMs: number;
  readonly maxLocks: number;
  readonly discoveryIntervalMs: number;
}

/** The keys `RedisLockDashboardOptions` (and its `history`) accept; a misspelt one is refused, not ignored. */
const DASHBOARD_OPTION_KEYS = keysOf<RedisLockDashboardOptions>()([
  'path',
  'readOnly',
  'guards',
  'canActivate',
  'allowRemote',
  'allowedOrigins',
  'allowedHosts',
  'topics',
  'refreshMs',
  'history',
  'maxLocks',
  'discoveryIntervalMs',
]);
const HISTORY_OPTION_KEYS = keysOf<NonNullable<RedisLockDashboardOptions['history']>>()(['sampleMs', 'windowMs']);

const PATH = /^[A-Za-z0-9_.~\-/]+$/;

/** Checks the options once, in `forRoot`, so a mistake stops the application at bootstrap. */
export function resolveDashboardOptions(options: RedisLockDashboardOptions = {}): ResolvedDashboardOptions {
  if (options === null || typeof options !== 'object') {
    throw new InvalidOptionsError('RedisLockDashboardModule.forRoot', 'pass an options object, e.g. { path: "/_locks" }');
  }
  refuseUnknownKeys(validate.refuse, 'dashboard', options, DASHBOARD_OPTION_KEYS);
  refuseUnknownKeys(validate.refuse, 'dashboard.history', options.history, HISTORY_OPTION_KEYS);
  const rawPath = options.path ?? '/_locks';
  const path = typeof rawPath === 'string' ? rawPath.replace(/^\/+|\/+$/g, '') : '';
  if (
    typeof rawPath !== 'string' ||
    path.length === 0 ||
    !PATH.test(path) ||
    path.split('/').some((s) => s === '' || s === '.' || s === '..')
  ) {
    throw new InvalidOptionsError(
      'dashboard.path',
      `got ${JSON.stringify(rawPath)}; use a plain URL path such as "/_locks" or "/admin/locks" (letters, digits, '_', '-', '.', '~', '/')`,
    );
  }
  // Safe unless told otherwise: actions need an explicit readOnly: false.
  const readOnly = options.readOnly ?? true;
  if (typeof readOnly !== 'boolean' && typeof readOnly !== 'function') {
    throw new InvalidOptionsError('dashboard.readOnly', 'use true, false, or a function (request) => boolean');
  }
  const guards = options.guards ?? [];
  if (!Array.isArray(guards) || guards.some((g) => typeof g !== 'function' && typeof (g as CanActivate)?.canActivate !== 'function')) {
    throw new InvalidOptionsError('dashboard.guards', 'pass an array of guard classes or objects with a canActivate(context) method');
  }
  if (options.canActivate !== undefined && typeof options.canActivate !== 'function') {
    throw new InvalidOptionsError('dashboard.canActivate', 'use a function (request, context) => boolean | Promise<boolean>');
  }
  // Whoever configured a guard or hook decided who may use the dashboard; nobody did otherwise.
  const allowRemote = options.allowRemote ?? (guards.length > 0 || options.canActivate !== undefined);
  if (typeof allowRemote !== 'boolean') {
    throw new InvalidOptionsError(
      'dashboard.allowRemote',
      'use true (serve any client your guards let through) or false (loopback clients only)',
    );
  }
  const allowedOrigins = new Set<string>();
  if (options.allowedOrigins !== undefined) {
    if (!Array.isArray(options.allowedOrigins)) {
      throw new InvalidOptionsError('dashboard.allowedOrigins', 'pass an array of origins, e.g. ["https://ops.example.com"]');
    }
    for (const entry of options.allowedOrigins) {
      const origin = canonicalOrigin(entry);
      if (origin === undefined) {
        throw new InvalidOptionsError(
          'dashboard.allowedOrigins',
          `got ${JSON.stringify(entry)}; use an origin as browsers send it: scheme, host and port only, e.g. ` +
            `"https://ops.example.com" or "http://localhost:8080"`,
        );
      }
      allowedOrigins.add(origin);
    }
  }
  const { hosts, warnAnyHost } = resolveHosts(options.allowedHosts, allowedOrigins, {
    allowRemote,
    guarded: guards.length > 0 || options.canActivate !== undefined,
  });
  let topics: string[] | undefined;
  if (options.topics !== undefined) {
    if (!Array.isArray(options.topics)) throw new InvalidOptionsError('dashboard.topics', 'pass an array of topic names');
    for (const topic of options.topics) assertValidTopic(topic, 'RedisLockDashboardModule.forRoot({ topics })');
    topics = [...new Set(options.topics)];
  }
  return {
    path,
    readOnly,
    guards,
    canActivate: options.canActivate,
    allowRemote,
    allowedOrigins,
    hosts,
    warnAnyHost,
    topics,
    refreshMs: milliseconds('dashboard.refreshMs', options.refreshMs, { min: 500, max: 3_600_000, default: 3_000 }),
    sampleMs: milliseconds('dashboard.history.sampleMs', options.history?.sampleMs, {
      min: 250,
      max: 3_600_000,
      default: 5_000,
      orZero: true,
    }),
    windowMs: milliseconds('dashboard.history.windowMs', options.history?.windowMs, {
      min: 10_000,
      max: 86_400_000,
      default: 600_000,
    }),
    maxLocks: validate.wholeNumber('dashboard.maxLocks', options.maxLocks, { min: 1, max: 100_000, default: 500 }),
    discoveryIntervalMs: milliseconds('dashboard.discoveryIntervalMs', options.discoveryIntervalMs, {
      min: 1,
      max: 86_400_000,
      default: 30_000,
    }),
  };
}

/**
 * The `Host` check: the names of `allowedHosts` and the hosts of `allowedOrigins`, beside loopback
 * names. Remote clients with no guard and no listed name would leave a DNS-rebinding page nothing
 * in its way: refused here, so the mistake stops the application at bootstrap.
 */
function resolveHosts(
  entries: unknown,
  allowedOrigins: ReadonlySet<string>,
  { allowRemote, guarded }: { allowRemote: boolean; guarded: boolean },
): { hosts?: HostAllowList; warnAnyHost: boolean } {
  if (entries === true) {
    if (!allowRemote) {
      throw new InvalidOptionsError(
        'dashboard.allowedHosts',
        'true (any Host) would let a page that rebinds its name to 127.0.0.1 reach this loopback-only dashboard; ' +
          ("list the names it is reached by instead (a tunnel's, a port-forward's), or serve it remotely (allowRemote) " +
            'behind a guard that checks a credential'),
      );
    }
    return { hosts: undefined, warnAnyHost: false };
  }
  const names = new Set<string>();
  const suffixes: string[] = [];
  if (entries !== undefined) {
    if (!Array.isArray(entries)) {
      throw new InvalidOptionsError(
        'dashboard.allowedHosts',
        'pass an array of host names, e.g. ["ops.example.com"], or true to answer any Host',
      );
    }
    for (const entry of entries) {
      const host = canonicalHostEntry(entry);
      if (host === undefined) {
        throw new InvalidOptionsError(
          'dashboard.allowedHosts',
          `got ${JSON.stringify(entry)}; use a host name as the Host header carries it, without scheme nor port (any port matches): ` +
            '"ops.example.com", "10.0.0.5", "[2001:db8::1]", or ".example.com" for that name and every name under it',
        );
      }
      if (host.startsWith('.')) suffixes.push(host);
      else names.add(host);
    }
  }
  const listed = names.size > 0 || suffixes.length > 0 || allowedOrigins.size > 0;
  if (allowRemote && !listed) {
    if (guarded) return { hosts: undefined, warnAnyHost: true };
    throw new InvalidOptionsError(
      'dashboard.allowRemote',
      'is true with no guard and no host name, so any page that rebinds its own name to this server (DNS rebinding) could use ' +
        'the dashboard from the browser of whoever opens it. List the names it is reached by in allowedHosts: ["ops.example.com"] ' +
        ('(or allowedHosts: true if a proxy in front refuses unknown names), and prefer a guard that checks ' +
          'a credential (guards or canActivate)'),
    );
  }
  return { hosts: { names, suffixes, origins: allowedOrigins }, warnAnyHost: false };
}

/** A whole number of ms in `min..max`; with `orZero`, 0 is accepted too and turns the feature off. */
function milliseconds(
  option: string,
  value: unknown,
  { orZero = false, ...rule }: { min: number; max: number; default: number; orZero?: boolean },
): number {
  if (orZero && value === 0) return 0;
  const use = `use a whole number of ms from ${rule.min} to ${rule.max}${orZero ? ' (or 0 to turn it off)' : ''}`;
  return validate.wholeNumber(option, value, { ...rule, use });
}
