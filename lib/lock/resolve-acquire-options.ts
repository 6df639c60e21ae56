import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { OPTION_BOUNDS } from '../core/options/option-bounds.js';
import { optionValidator as validate } from '../core/options/option-validation.js';
import type { RedisLockConfig } from '../core/options/redis-lock-config.js';
import type { AcquireOptions, ResolvedAcquireOptions } from './interfaces/acquire-options.interface.js';
import { resolveSyncReplicas } from '../core/options/resolve-sync-replicas.js';

/** Longest `keyPattern` accepted: it becomes a metric label value. */
const MAX_KEY_PATTERN_LENGTH = 200;

/** Validates per-call options against the module defaults; a bad value throws `InvalidOptionsError`. */
export function resolveAcquireOptions(
  options: AcquireOptions | undefined,
  defaults: RedisLockConfig['lock'],
): ResolvedAcquireOptions {
  const o = options ?? {};
  if (typeof o !== 'object') throw new InvalidOptionsError('acquire options', 'expected an object');
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
