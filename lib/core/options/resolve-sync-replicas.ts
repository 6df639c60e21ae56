import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { optionValidator as validate } from './option-validation.js';
import type { SyncReplicasOptions } from './redis-lock-module-options.interface.js';

/**
 * Validates a `syncReplicas` option. `timeout` must be below half the lease: WAIT runs after the lock
 * is taken, and a caller should get the lock with most of its lease still ahead.
 */
export function resolveSyncReplicas(option: string, value: unknown, leaseTime: number): SyncReplicasOptions | undefined {
  if (value === undefined || value === false) return undefined;
  const v = value as Partial<SyncReplicasOptions> | null;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new InvalidOptionsError(option, 'expected { replicas: number; timeout: number } (or false to turn it off)');
  }
  const replicas = validate.wholeNumber(`${option}.replicas`, v.replicas, {
    min: 1,
    max: 1000,
    use: 'use a whole number of replicas from 1 to 1000',
  });
  const maxTimeout = Math.floor(leaseTime / 2) - 1;
  const timeout = validate.wholeNumber(`${option}.timeout`, v.timeout, {
    min: 1,
    max: maxTimeout,
    use: `use whole milliseconds from 1 to ${maxTimeout} (below half the lease of ${leaseTime} ms; 0 would make WAIT block forever)`,
  });
  return { replicas, timeout };
}
