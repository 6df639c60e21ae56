import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { keysOf, refuseUnknownKeys } from '../core/options/known-option-keys.js';
import { OPTION_BOUNDS } from '../core/options/option-bounds.js';
import { optionValidator as validate, refuseAsInvalidOption } from '../core/options/option-validation.js';
import type { RedisLockConfig } from '../core/options/redis-lock-config.js';
import type { AcquireOptions, ResolvedAcquireOptions } from './interfaces/acquire-options.interface.js';
import { resolveSyncReplicas } from '../core/options/resolve-sync-replicas.js';

/** Longest `keyPattern` accepted: it becomes a metric label value. */
const MAX_KEY_PATTERN_LENGTH = 200;

/** The keys of per-call acquire options. */
const ACQUIRE_OPTION_KEYS = keysOf<AcquireOptions>()(['waitTimeout', 'leaseTime', 'signal', 'fair', 'keyPattern', 'syncReplicas']);

/** Validates per-call options against the module defaults; a bad value or an unknown key throws `InvalidOptionsError`. */
export function resolveAcquireOptions(options: AcquireOptions | undefined, defaults: RedisLockConfig['lock']): ResolvedAcquireOptions {
  const o = options ?? {};
  if (typeof o !== 'object') throw new InvalidOptionsError('acquire options', 'expected an object');
  // A for-in over a handful of keys: this runs on every acquire with a fresh options object.
  for (const key in o) {
    if (!ACQUIRE_OPTION_KEYS.includes(key as keyof AcquireOptions)) refuseUnknownKeys(refuseAsInvalidOption, '', o, ACQUIRE_OPTION_KEYS);
  }
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
    throw new InvalidOptionsError('signal', 'expected an AbortSignal');
  }
  const fair = validate.flag('fair', o.fair, { default: defaults.fair });
  if (o.keyPattern !== undefined && (typeof o.keyPattern !== 'string' || o.keyPattern.length > MAX_KEY_PATTERN_LENGTH)) {
    throw new InvalidOptionsError('keyPattern', `use a string of at most ${MAX_KEY_PATTERN_LENGTH} characters, like 'order:<id>'`);
  }
  const explicitLease = o.leaseTime !== undefined;
  const leaseTime = validate.duration('leaseTime', o.leaseTime, { ...OPTION_BOUNDS.leaseTime, default: defaults.leaseTime });
  return {
    waitTimeout: validate.duration('waitTimeout', o.waitTimeout, { ...OPTION_BOUNDS.waitTimeout, default: defaults.waitTimeout }),
    leaseTime,
    watchdog: !explicitLease && defaults.watchdog,
    signal: o.signal,
    fair,
    keyPattern: o.keyPattern,
    syncReplicas:
      o.syncReplicas === undefined && !explicitLease
        ? defaults.syncReplicas
        : resolveSyncReplicas('syncReplicas', o.syncReplicas === undefined ? defaults.syncReplicas : o.syncReplicas, leaseTime),
  };
}

/** The per-call options a resolution was made from, compared field by field before it is reused. */
interface Resolution {
  readonly waitTimeout: unknown;
  readonly leaseTime: unknown;
  readonly signal: unknown;
  readonly fair: unknown;
  readonly keyPattern: unknown;
  readonly resolved: ResolvedAcquireOptions;
}

/**
 * `resolveAcquireOptions` against one module's defaults, done once per options object rather than
 * on every acquire: callers usually pass the same constant object, or none. A reused object is
 * resolved again when any of its fields changed since (it may be mutated between calls), and one
 * with `syncReplicas` is always resolved afresh (that option is an object of its own). Tries that
 * never wait (`wait` false: `waitTimeout` 0 whatever the options say) keep their own resolutions.
 */
export class AcquireOptionsResolver {
  private readonly resolutions = { wait: new WeakMap<object, Resolution>(), try: new WeakMap<object, Resolution>() };
  private readonly none: { wait?: ResolvedAcquireOptions; try?: ResolvedAcquireOptions } = {};

  constructor(private readonly defaults: RedisLockConfig['lock']) {}

  resolve(options: AcquireOptions | undefined, wait = true): ResolvedAcquireOptions {
    const mode = wait ? 'wait' : 'try';
    const fresh = () => resolveAcquireOptions(wait ? options : { ...options, waitTimeout: 0 }, this.defaults);
    if (options === undefined) return (this.none[mode] ??= fresh());
    if (typeof options !== 'object' || options === null || options.syncReplicas !== undefined) return fresh();
    const { waitTimeout, leaseTime, signal, fair, keyPattern } = options;
    const known = this.resolutions[mode].get(options);
    if (
      known !== undefined &&
      known.waitTimeout === waitTimeout &&
      known.leaseTime === leaseTime &&
      known.signal === signal &&
      known.fair === fair &&
      known.keyPattern === keyPattern
    ) {
      return known.resolved;
    }
    const resolved = fresh();
    this.resolutions[mode].set(options, { waitTimeout, leaseTime, signal, fair, keyPattern, resolved });
    return resolved;
  }
}
