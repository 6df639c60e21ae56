import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { duration } from '../core/options/resolve-redis-lock-config.js';
import type { RedisLockConfig } from '../core/options/redis-lock-config.js';
import type { SyncReplicasOptions } from '../core/options/redis-lock-module-options.interface.js';
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
  if (o.fair !== undefined && typeof o.fair !== 'boolean') {
    throw new InvalidOptionsError('fair', 'use true or false');
  }
  if (o.keyPattern !== undefined && (typeof o.keyPattern !== 'string' || o.keyPattern.length > MAX_KEY_PATTERN_LENGTH)) {
    throw new InvalidOptionsError('keyPattern', `use a string of at most ${MAX_KEY_PATTERN_LENGTH} characters, like 'order:<id>'`);
  }
  const explicitLease = o.leaseTime !== undefined;
  const leaseTime = duration('leaseTime', o.leaseTime, defaults.leaseTime, { min: 10 });
  return {
    waitTimeout: duration('waitTimeout', o.waitTimeout, defaults.waitTimeout, { min: 0 }),
    leaseTime,
    watchdog: !explicitLease && defaults.watchdog,
    signal: o.signal,
    fair: o.fair ?? defaults.fair,
    keyPattern: o.keyPattern,
    syncReplicas:
      o.syncReplicas === undefined && !explicitLease
        ? defaults.syncReplicas
        : resolveSyncReplicas('syncReplicas', o.syncReplicas === undefined ? defaults.syncReplicas : o.syncReplicas, leaseTime),
  };
}
