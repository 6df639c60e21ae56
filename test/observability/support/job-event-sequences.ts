import type { RedisLockEventName } from '../../../lib/index.js';

/** The events of a job that fails both of its two attempts, in the order they are reported. */
export const FAILED_TWICE_THEN_DEAD: readonly RedisLockEventName[] = [
  'job.scheduled',
  'job.started',
  'job.failed',
  'job.retried',
  'job.started',
  'job.failed',
  'job.dead',
];
