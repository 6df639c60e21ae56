import { InvalidOptionsError } from '../errors/invalid-options.error';
import { duration } from '../options/resolve-redis-lock-config';
import type { RedisLockConfig } from '../options/redis-lock-config';
import type { AcquireOptions } from './interfaces/acquire-options.interface';

/** Per-call options after validation and defaults. */
export interface ResolvedAcquireOptions {
  readonly waitTimeout: number;
  readonly leaseTime: number;
  readonly watchdog: boolean;
  readonly signal?: AbortSignal;
  readonly fair: boolean;
}

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
  const explicitLease = o.leaseTime !== undefined;
  return {
    waitTimeout: duration('waitTimeout', o.waitTimeout, defaults.waitTimeout, { min: 0 }),
    leaseTime: duration('leaseTime', o.leaseTime, defaults.leaseTime, { min: 10 }),
    watchdog: !explicitLease && defaults.watchdog,
    signal: o.signal,
    fair: o.fair ?? defaults.fair,
  };
}
