import { randomUUID } from 'node:crypto';
import { InvalidJobError } from '../../core/errors/invalid-job.error.js';
import type { RedisLockConfig } from '../../core/options/redis-lock-config.js';
import type { BackoffOptions } from '../../core/options/redis-lock-module-options.interface.js';
import { MAX_TIMER_MS } from '../../core/options/resolve-redis-lock-config.js';
import { MAX_DUE_MS, MAX_JOB_ID_BYTES } from './delay-queue.constants.js';
import type { ScheduleOptions } from '../interfaces/schedule-options.interface.js';
import { encodeBodyTail, encodePayload } from './job-codec.js';

/** A job checked and encoded, ready for the schedule script. */
export interface PreparedJob {
  readonly id: string;
  /** `d`: `when` is a delay from the script's TIME; `a`: `when` is an absolute epoch ms. */
  readonly kind: 'd' | 'a';
  readonly when: number;
  /** The stored body after the header Redis fills in (see job-codec.ts). */
  readonly tail: string;
  readonly replace: boolean;
  /** UTF-8 bytes of the payload's JSON (reported when a committed job could not be written). */
  readonly payloadBytes: number;
}

/**
 * Validates one job completely (payload, id, time, retry options) before anything is sent, so a
 * bad job in a batch leaves nothing half-written. `field` prefixes the paths in error messages.
 */
export function prepareJob(
  topic: string,
  payload: unknown,
  options: ScheduleOptions | undefined,
  defaults: RedisLockConfig['delayQueue'],
  field = '',
  /** The scheduling span's W3C trace context, stored with the job for the handler's span. */
  traceparent?: string,
): PreparedJob {
  const at = (name: string) => (field ? `${field}.${name}` : name);
  const o = options ?? {};
  if (typeof o !== 'object') throw new InvalidJobError(topic, field || 'options', 'must be an object');
  const payloadJson = encodePayload(topic, payload, at('payload'));

  let id: string;
  if (o.id === undefined) {
    id = randomUUID();
  } else {
    if (typeof o.id !== 'string' || o.id.length === 0) {
      throw new InvalidJobError(topic, at('id'), `is ${describe(o.id)}; use a non-empty string`);
    }
    if (Buffer.byteLength(o.id, 'utf8') > MAX_JOB_ID_BYTES) {
      throw new InvalidJobError(topic, at('id'), `is longer than ${MAX_JOB_ID_BYTES} UTF-8 bytes; use a shorter id (or a hash of it)`);
    }
    if (!o.id.isWellFormed()) throw new InvalidJobError(topic, at('id'), 'contains a lone surrogate; use well-formed Unicode');
    id = o.id;
  }

  let kind: 'd' | 'a' = 'd';
  let when = 0;
  if (o.delay !== undefined && o.at !== undefined) {
    throw new InvalidJobError(topic, at('delay'), 'and `at` are both set; give one of them');
  }
  if (o.delay !== undefined) {
    const delay = o.delay;
    if (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0) {
      throw new InvalidJobError(topic, at('delay'), `is ${describe(delay)}; use a finite number of milliseconds >= 0`);
    }
    if (Date.now() + delay > MAX_DUE_MS) {
      throw new InvalidJobError(topic, at('delay'), `is ${delay} ms, past the year 2100; use a shorter delay`);
    }
    when = Math.ceil(delay);
  } else if (o.at !== undefined) {
    const time = o.at instanceof Date ? o.at.getTime() : o.at;
    if (typeof time !== 'number' || !Number.isFinite(time) || time < 0) {
      throw new InvalidJobError(topic, at('at'), `is ${describe(o.at)}; use a valid Date or epoch milliseconds >= 0`);
    }
    if (time > MAX_DUE_MS) throw new InvalidJobError(topic, at('at'), 'is past the year 2100; use an earlier time');
    kind = 'a';
    when = Math.ceil(time);
  }

  let maxAttempts: number | undefined;
  if (o.maxAttempts !== undefined) {
    if (typeof o.maxAttempts !== 'number' || !Number.isInteger(o.maxAttempts) || o.maxAttempts < 1 || o.maxAttempts > 1_000_000) {
      throw new InvalidJobError(topic, at('maxAttempts'), `is ${describe(o.maxAttempts)}; use a whole number from 1 to 1000000`);
    }
    maxAttempts = o.maxAttempts;
  }
  const backoff = o.backoff === undefined ? undefined : resolveBackoff(o.backoff, defaults.backoff, (name, problem) => {
    throw new InvalidJobError(topic, at(`backoff.${name}`), problem);
  });
  if (o.replace !== undefined && typeof o.replace !== 'boolean') {
    throw new InvalidJobError(topic, at('replace'), `is ${describe(o.replace)}; use true or false`);
  }
  return {
    id,
    kind,
    when,
    tail: encodeBodyTail(payloadJson, maxAttempts, backoff, traceparent),
    replace: o.replace === true,
    payloadBytes: Buffer.byteLength(payloadJson, 'utf8'),
  };
}

/** A partial `BackoffOptions` merged over `base`, each field checked; `fail(field, problem)` must throw. */
export function resolveBackoff(
  value: BackoffOptions,
  base: Required<BackoffOptions>,
  fail: (field: string, problem: string) => never,
): Required<BackoffOptions> {
  if (value === null || typeof value !== 'object') fail('', 'must be an object');
  const ms = (name: 'delay' | 'maxDelay') => {
    const v = value[name];
    if (v === undefined) return base[name];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MAX_TIMER_MS) {
      fail(name, `is ${describe(v)}; use a number of milliseconds from 0 to ${MAX_TIMER_MS}`);
    }
    return Math.floor(v as number);
  };
  const factor = value.factor ?? base.factor;
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1) fail('factor', `is ${describe(factor)}; use a finite number >= 1`);
  const jitter = value.jitter ?? base.jitter;
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) fail('jitter', `is ${describe(jitter)}; use a number from 0 to 1`);
  return { delay: ms('delay'), factor, maxDelay: ms('maxDelay'), jitter };
}

/** The wait before the next delivery after `attempt` failed: exponential, capped, with random jitter below the cap. */
export function backoffDelay(backoff: Required<BackoffOptions>, attempt: number): number {
  const exponential = backoff.delay * Math.pow(backoff.factor, Math.max(0, attempt - 1));
  const capped = Math.min(backoff.maxDelay, exponential);
  return Math.round(capped * (1 - backoff.jitter * Math.random()));
}

export function describe(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (value instanceof Date) return 'an invalid Date';
  if (typeof value === 'bigint') return `the BigInt ${value}n`;
  return value === null ? 'null' : typeof value;
}
