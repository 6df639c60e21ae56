import { randomUUID } from 'node:crypto';
import { InvalidJobError } from '../../core/errors/invalid-job.error.js';
import type { RedisLockConfig } from '../../core/options/redis-lock-config.js';
import { keysOf, refuseUnknownKeys } from '../../core/options/known-option-keys.js';
import { OPTION_BOUNDS } from '../../core/options/option-bounds.js';
import { OptionValidator } from '../../core/options/option-validation.js';
import { resolveBackoff } from '../../core/options/retry-backoff.js';
import { MAX_DUE_MS, MAX_GROUP_BYTES, MAX_JOB_ID_BYTES, MAX_PRIORITY } from './delay-queue.constants.js';
import type { ScheduleOptions } from '../interfaces/schedule-options.interface.js';
import { encodeBodyTail, encodePayload } from './job-codec.js';
import { checkDedupe, encodeDedupe } from './dedupe-spec.js';
import { checkStoredName } from './stored-name.js';

/** The keys of `schedule()`'s options (and of a `scheduleMany()` job besides `payload`). */
const SCHEDULE_OPTION_KEYS = keysOf<ScheduleOptions>()([
  'delay',
  'at',
  'id',
  'replace',
  'maxAttempts',
  'backoff',
  'group',
  'priority',
  'dedupe',
]);

/** How a job's `when` gives its due time: `delay`, ms after the script's TIME; `at`, an epoch ms. */
type DueKind = 'delay' | 'at';

/** The code of a `DueKind` in the scripts' arguments (schedule-jobs, write-outbox-job, reschedule-job). */
export function dueKindArg(kind: DueKind): 'd' | 'a' {
  return kind === 'delay' ? 'd' : 'a';
}

/** A job checked and encoded, ready for the schedule script. */
export interface PreparedJob {
  readonly id: string;
  readonly kind: DueKind;
  readonly when: number;
  /** The stored body after the header Redis fills in (see job-codec.ts). */
  readonly tail: string;
  readonly replace: boolean;
  /** The job's group (jobs of one group start one at a time, in due order), when it has one. */
  readonly group?: string;
  /** Its dedupe as stored (dedupe-spec.ts: `encodeDedupe`), when it has one; also in `tail`. */
  readonly dedupe?: string;
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
  const validate = new OptionValidator((name, problem) => {
    throw new InvalidJobError(topic, at(name), problem);
  }, 'is');
  const o = options ?? {};
  if (typeof o !== 'object') throw new InvalidJobError(topic, field || 'options', 'must be an object');
  refuseUnknownKeys(validate.refuse, '', o, SCHEDULE_OPTION_KEYS);
  const { payloadJson, payloadBytes } = preparePayload(topic, payload, defaults, at('payload'));

  const dedupe = o.dedupe === undefined ? undefined : encodeDedupe(checkDedupe(topic, at, validate, o.dedupe, o));

  let id: string;
  if (o.id === undefined) {
    id = randomUUID();
  } else {
    if (typeof o.id !== 'string' || o.id.length === 0) validate.refuseValue('id', o.id, 'use a non-empty string');
    if (Buffer.byteLength(o.id, 'utf8') > MAX_JOB_ID_BYTES) {
      throw new InvalidJobError(topic, at('id'), `is longer than ${MAX_JOB_ID_BYTES} UTF-8 bytes; use a shorter id (or a hash of it)`);
    }
    if (!o.id.isWellFormed()) throw new InvalidJobError(topic, at('id'), 'contains a lone surrogate; use well-formed Unicode');
    id = o.id;
  }

  let kind: DueKind = 'delay';
  let when = 0;
  if (o.delay !== undefined && o.at !== undefined) {
    throw new InvalidJobError(topic, at('delay'), 'and `at` are both set; give one of them');
  }
  if (o.delay !== undefined) {
    const delay = o.delay;
    if (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0) {
      validate.refuseValue('delay', delay, 'use a finite number of milliseconds >= 0');
    }
    if (Date.now() + delay > MAX_DUE_MS) {
      throw new InvalidJobError(topic, at('delay'), `is ${delay} ms, past the year 2100; use a shorter delay`);
    }
    when = Math.ceil(delay);
  } else if (o.at !== undefined) {
    const time = o.at instanceof Date ? o.at.getTime() : o.at;
    if (typeof time !== 'number' || !Number.isFinite(time) || time < 0) {
      validate.refuseValue('at', o.at, 'use a valid Date or epoch milliseconds >= 0');
    }
    if (time > MAX_DUE_MS) throw new InvalidJobError(topic, at('at'), 'is past the year 2100; use an earlier time');
    kind = 'at';
    when = Math.ceil(time);
  }

  // Absent retry options stay absent: the job then follows its consumer's settings.
  const maxAttempts =
    o.maxAttempts === undefined ? undefined : validate.wholeNumber('maxAttempts', o.maxAttempts, OPTION_BOUNDS.maxAttempts);
  const backoff = o.backoff === undefined ? undefined : resolveBackoff(validate, 'backoff', o.backoff, defaults.backoff);
  if (o.replace !== undefined) validate.flag('replace', o.replace);
  const group = o.group === undefined ? undefined : checkGroup(topic, at('group'), o.group);
  const priority = o.priority === undefined ? undefined : validate.wholeNumber('priority', o.priority, { min: 0, max: MAX_PRIORITY });
  if (priority && group !== undefined) {
    throw new InvalidJobError(
      topic,
      at('priority'),
      `is ${priority} on a job of group ${JSON.stringify(group)}; a group runs its jobs in due order, so give its jobs no priority ` +
        '(or schedule the job without a group)',
    );
  }
  return {
    id,
    kind,
    when,
    tail: encodeBodyTail(payloadJson, { maxAttempts, backoff, traceparent, group, priority, dedupe }),
    replace: o.replace === true,
    group,
    dedupe,
    payloadBytes,
  };
}

/**
 * A payload checked (JSON data, at most `delayQueue.maxPayloadBytes`) and encoded: `schedule()`'s
 * and `updatePayload()`'s.
 */
export function preparePayload(
  topic: string,
  payload: unknown,
  defaults: RedisLockConfig['delayQueue'],
  field = 'payload',
): { readonly payloadJson: string; readonly payloadBytes: number } {
  const payloadJson = encodePayload(topic, payload, field);
  const payloadBytes = Buffer.byteLength(payloadJson, 'utf8');
  if (payloadBytes > defaults.maxPayloadBytes) {
    throw new InvalidJobError(
      topic,
      field,
      `is ${payloadBytes} bytes as JSON (UTF-8), over the limit of ${defaults.maxPayloadBytes} (delayQueue.maxPayloadBytes); ` +
        'keep large data elsewhere and pass a reference to it, or raise the limit',
    );
  }
  return { payloadJson, payloadBytes };
}

/** A group name: stored verbatim in the job's header and in a key name. */
function checkGroup(topic: string, path: string, group: unknown): string {
  return checkStoredName(topic, path, group, MAX_GROUP_BYTES, 'group name', 'order:42');
}
