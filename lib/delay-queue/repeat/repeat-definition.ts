import { createHash } from 'node:crypto';
import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import { refuseUnknownKeys } from '../../core/options/known-option-keys.js';
import { describeValue, OptionValidator } from '../../core/options/option-validation.js';
import type { RedisLockConfig } from '../../core/options/redis-lock-config.js';
import type { RepeatCatchUp, RepeatOptions, RepeatSchedule } from '../interfaces/repeat-options.interface.js';
import { MAX_JOB_ID_BYTES } from '../jobs/delay-queue.constants.js';
import { formatOneTail } from '../jobs/job-codec.js';
import { prepareJob } from '../jobs/prepare-job.js';
import { tickJobId } from '../jobs/tick-job-id.js';
import { REPEAT_OPTION_KEYS, REPEAT_SCHEDULE_KEYS } from './repeat-option-keys.js';
import { calendarOf, canBuildCalendar } from './calendar-cache.js';
import { prepareBounds, readBounds, type RepeatBounds } from './repeat-bounds.js';
import { cronProblem } from './cron-problem.js';
import type { TickCalendar } from './tick-calendar.js';

/** Shortest `every` accepted, in ms. */
const MIN_REPEAT_EVERY_MS = 50;

/** Latest tick a schedule may have (far inside the due-score range). */
const LONGEST_TICK_ID_SUFFIX = tickJobId('', Date.UTC(2100, 0, 1)).length;

/** The catch-up rule when none is given. */
const DEFAULT_CATCH_UP: RepeatCatchUp = 'latest';

/**
 * A schedule checked and encoded. Its stored form (one field of the shard's schedules hash) is
 * `<fingerprint><json>`, the fingerprint being the SHA-1 (40 hex digits) of the JSON: the scripts
 * compare fingerprints to tell "the same definition" from "changed since you read it".
 */
export interface RepeatDefinition {
  readonly id: string;
  readonly schedule: RepeatSchedule;
  readonly catchUp: RepeatCatchUp;
  /** The tick jobs' body tail (payload, maxAttempts, backoff; see job-codec.ts). */
  readonly tail: string;
  /** Its limit and dates (repeat-bounds.ts); empty for an unbounded schedule. */
  readonly bounds: RepeatBounds;
  readonly fingerprint: string;
  /** Its ticks: built on first use and shared by every definition with the same schedule (calendar-cache.ts). */
  readonly calendar: TickCalendar;
}

/**
 * The stored JSON (short keys: one per schedule, read on every advance). The bounds are present only
 * when given, so an unbounded schedule keeps the stored form (and fingerprint) it had before them.
 */
interface StoredDefinition {
  readonly s: RepeatSchedule;
  readonly k: RepeatCatchUp;
  readonly t: string;
  /** limit */
  readonly l?: number;
  /** startDate (epoch ms) */
  readonly a?: number;
  /** endDate (epoch ms) */
  readonly e?: number;
}

/**
 * Validates a `repeat()` call completely before anything is sent. Errors name the option's path
 * (`repeat.catchUp`, `repeat.schedule.cron`); `location` (e.g. `@OnDelayed on Reports.daily`), when
 * given, is added to their message.
 *
 * @throws InvalidOptionsError naming the option; InvalidJobError for a payload JSON cannot carry
 */
export function prepareRepeat(
  topic: string,
  schedule: RepeatSchedule,
  options: RepeatOptions | undefined,
  defaults: RedisLockConfig['delayQueue'],
  location?: string,
): RepeatDefinition {
  const validate = new OptionValidator((option, problem) => {
    throw new InvalidOptionsError(`repeat.${option}`, location === undefined ? problem : `${problem} (in ${location})`);
  });
  const o = options ?? {};
  if (typeof o !== 'object' || o === null) validate.refuseValue('options', o, 'use an object');
  refuseUnknownKeys(validate.refuse, 'schedule', schedule, REPEAT_SCHEDULE_KEYS);
  refuseUnknownKeys(validate.refuse, '', o, REPEAT_OPTION_KEYS);
  const normalized = normalizeSchedule(schedule, validate);
  const id = o.id ?? topic;
  if (typeof id !== 'string' || id.length === 0) validate.refuseValue('id', id, 'use a non-empty string');
  if (!id.isWellFormed()) validate.refuseValue('id', id, 'use well-formed Unicode (no lone surrogate)');
  if (Buffer.byteLength(id, 'utf8') > MAX_JOB_ID_BYTES - LONGEST_TICK_ID_SUFFIX) {
    validate.refuseValue('id', id, `use at most ${MAX_JOB_ID_BYTES - LONGEST_TICK_ID_SUFFIX} UTF-8 bytes`);
  }
  const catchUp = validate.oneOf<RepeatCatchUp>('catchUp', o.catchUp, ['none', 'latest', 'all'], { default: DEFAULT_CATCH_UP });
  const bounds = prepareBounds(o, validate);
  const job = prepareJob(
    topic,
    o.payload ?? null,
    { maxAttempts: o.maxAttempts, backoff: o.backoff },
    defaults,
    location === undefined ? 'repeat' : `${location}: repeat`,
  );
  // Hashed with the tail in its first format: the fingerprint names the definition, not how this version stores jobs.
  const json = JSON.stringify(storedJson(normalized, catchUp, formatOneTail(job.tail), bounds));
  return definitionOf(id, normalized, catchUp, job.tail, bounds, createHash('sha1').update(json).digest('hex'));
}

/** The value stored for `definition` in the schedules hash. */
export function storedForm(definition: RepeatDefinition): string {
  return definition.fingerprint + JSON.stringify(storedJson(definition.schedule, definition.catchUp, definition.tail, definition.bounds));
}

function storedJson(schedule: RepeatSchedule, catchUp: RepeatCatchUp, tail: string, bounds: RepeatBounds): StoredDefinition {
  const stored: StoredDefinition = { s: schedule, k: catchUp, t: tail };
  return { ...stored, l: bounds.limit, a: bounds.startDate, e: bounds.endDate };
}

/** Reads a stored schedule back; undefined for a value this version cannot read. */
export function readStoredForm(id: string, value: string): RepeatDefinition | undefined {
  let stored: Partial<StoredDefinition>;
  try {
    stored = JSON.parse(value.slice(40)) as Partial<StoredDefinition>;
  } catch {
    return undefined;
  }
  const { s: schedule, k: catchUp, t: tail } = stored ?? {};
  if (!/^[0-9a-f]{40}$/.test(value.slice(0, 40)) || typeof tail !== 'string' || !isCatchUp(catchUp) || !isSchedule(schedule))
    return undefined;
  const bounds = readBounds(stored ?? {});
  if (!bounds || !canBuildCalendar(schedule)) return undefined;
  return definitionOf(id, schedule, catchUp, tail, bounds, value.slice(0, 40));
}

/** A definition whose calendar is looked up when first asked for (most reads never need it). */
function definitionOf(
  id: string,
  schedule: RepeatSchedule,
  catchUp: RepeatCatchUp,
  tail: string,
  bounds: RepeatBounds,
  fingerprint: string,
): RepeatDefinition {
  return {
    id,
    schedule,
    catchUp,
    tail,
    bounds,
    fingerprint,
    get calendar() {
      return calendarOf(schedule);
    },
  };
}

function isCatchUp(value: unknown): value is RepeatCatchUp {
  return value === 'none' || value === 'latest' || value === 'all';
}

function isSchedule(value: unknown): value is RepeatSchedule {
  if (value === null || typeof value !== 'object') return false;
  const s = value as { every?: unknown; cron?: unknown; timeZone?: unknown };
  if (typeof s.every === 'number')
    return Number.isSafeInteger(s.every) && s.every >= MIN_REPEAT_EVERY_MS && s.cron === undefined && s.timeZone === undefined;
  return typeof s.cron === 'string' && (s.timeZone === undefined || typeof s.timeZone === 'string');
}

function normalizeSchedule(schedule: unknown, validate: OptionValidator): RepeatSchedule {
  if (schedule === null || typeof schedule !== 'object') {
    return validate.refuse('schedule', `got ${describeValue(schedule)}; use { every: ms } or { cron: '0 2 * * *', timeZone? }`);
  }
  const s = schedule as { every?: unknown; cron?: unknown; timeZone?: unknown };
  if ((s.every === undefined) === (s.cron === undefined)) {
    return validate.refuse('schedule', 'give exactly one of `every` (ms) and `cron` (a pattern)');
  }
  if (s.every !== undefined) {
    if (s.timeZone !== undefined) return validate.refuse('schedule.timeZone', 'applies to `cron` only; `every` ticks are time-zone free');
    const every = validate.wholeNumber('schedule.every', s.every, {
      min: MIN_REPEAT_EVERY_MS,
      max: 366 * 24 * 3_600_000,
      use: `use a whole number of milliseconds from ${MIN_REPEAT_EVERY_MS} to one year`,
    });
    return { every };
  }
  if (typeof s.cron !== 'string') return validate.refuseValue('schedule.cron', s.cron, "use a cron pattern such as '0 2 * * *'");
  if (s.timeZone !== undefined) {
    if (typeof s.timeZone !== 'string')
      return validate.refuseValue('schedule.timeZone', s.timeZone, "use an IANA time zone such as 'Europe/Warsaw'");
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: s.timeZone });
    } catch {
      return validate.refuseValue('schedule.timeZone', s.timeZone, "use an IANA time zone such as 'Europe/Warsaw'");
    }
  }
  const fields = s.cron.trim().split(/\s+/).filter(Boolean).length;
  if (!s.cron.trim().startsWith('@') && fields !== 5 && fields !== 6) {
    return validate.refuse('schedule.cron', `${JSON.stringify(s.cron)} has ${fields} field${fields === 1 ? '' : 's'}; ${CRON_FIELDS}`);
  }
  const normalized: RepeatSchedule = s.timeZone === undefined ? { cron: s.cron } : { cron: s.cron, timeZone: s.timeZone };
  let next: number | null;
  try {
    next = calendarOf(normalized).after(Date.now());
  } catch (error) {
    return validate.refuse('schedule.cron', `${JSON.stringify(s.cron)}: ${cronProblem(s.cron, error)}`);
  }
  if (next === null) return validate.refuse('schedule.cron', `${JSON.stringify(s.cron)} has no future run`);
  return normalized;
}

/** What a cron pattern is made of (docs/scheduling.md), the remedy of a pattern with a wrong number of fields. */
const CRON_FIELDS = "use 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first, e.g. '0 2 * * *'";
