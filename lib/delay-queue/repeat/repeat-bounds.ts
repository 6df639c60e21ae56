import type { OptionValidator } from '../../core/options/option-validation.js';
import type { RepeatCatchUp } from '../interfaces/repeat-options.interface.js';
import type { TickCalendar } from './tick-calendar.js';

/** The latest `startDate` / `endDate` accepted (epoch ms): tick job ids are sized for ticks before 2100. */
const LATEST_DATE_MS = Date.UTC(2100, 0, 1);

/**
 * A schedule's bounds, all optional: at most `limit` ticks queued in all (counted in Redis), no tick
 * before `startDate` nor after `endDate` (epoch ms), and none queued once the server clock has
 * passed `endDate`. An unbounded schedule has none of them.
 */
export interface RepeatBounds {
  readonly limit?: number;
  readonly startDate?: number;
  readonly endDate?: number;
}

/** The bounds options of `repeat()` as given by the caller. */
export interface RepeatBoundsOptions {
  readonly limit?: unknown;
  readonly startDate?: unknown;
  readonly endDate?: unknown;
}

/**
 * Checks the bounds options: `limit` a positive whole number, each date a valid `Date` or epoch ms
 * (1970 to 2100), `endDate` after `startDate`. Only the options given are in the result.
 *
 * @throws InvalidOptionsError (through `validate`) naming the option
 */
export function prepareBounds(options: RepeatBoundsOptions, validate: OptionValidator): RepeatBounds {
  const limit =
    options.limit === undefined
      ? undefined
      : validate.wholeNumber('limit', options.limit, { min: 1, max: Number.MAX_SAFE_INTEGER, use: 'use a positive whole number of runs' });
  const startDate = epochMs('startDate', options.startDate, validate);
  const endDate = epochMs('endDate', options.endDate, validate);
  if (startDate !== undefined && endDate !== undefined && endDate <= startDate) {
    validate.refuse(
      'endDate',
      `${new Date(endDate).toISOString()} is not after startDate ${new Date(startDate).toISOString()}; give an endDate after the startDate`,
    );
  }
  return withoutUndefined({ limit, startDate, endDate });
}

/** Bounds read back from a stored definition; undefined when they are not what `prepareBounds` stores. */
export function readBounds(stored: { l?: unknown; a?: unknown; e?: unknown }): RepeatBounds | undefined {
  const valid = (value: unknown, min: number) => value === undefined || (Number.isSafeInteger(value) && (value as number) >= min);
  if (!valid(stored.l, 1) || !valid(stored.a, 0) || !valid(stored.e, 0)) return undefined;
  return withoutUndefined({
    limit: stored.l as number | undefined,
    startDate: stored.a as number | undefined,
    endDate: stored.e as number | undefined,
  });
}

/** Whether the schedule has any bound. */
export function isBounded(bounds: RepeatBounds): boolean {
  return bounds.limit !== undefined || bounds.startDate !== undefined || bounds.endDate !== undefined;
}

/** The bounds as the repeat scripts take them, by name ('' for none). */
export function boundsArgs(bounds: RepeatBounds): { limit: string; startDate: string; endDate: string } {
  return { limit: String(bounds.limit ?? ''), startDate: String(bounds.startDate ?? ''), endDate: String(bounds.endDate ?? '') };
}

/** The first tick of a new definition at server time `nowMs`: after now, not before `startDate`; null when none is before `endDate`. */
export function firstTickWithin(calendar: TickCalendar, bounds: RepeatBounds, nowMs: number): number | null {
  if (bounds.endDate !== undefined && nowMs > bounds.endDate) return null;
  const first = calendar.after(bounds.startDate === undefined ? nowMs : Math.max(nowMs, bounds.startDate - 1));
  return first !== null && bounds.endDate !== undefined && first > bounds.endDate ? null : first;
}

/**
 * The tick to queue after `tick` (see TickCalendar.nextToEnqueue), kept within the bounds: none once
 * `queued` ticks reach `limit` or the server clock passed `endDate`; a missed tick before `startDate`
 * is not caught up (the first tick from `startDate` on is queued instead). Null: finished.
 */
export function nextTickWithin(
  calendar: TickCalendar,
  catchUp: RepeatCatchUp,
  bounds: RepeatBounds,
  tick: number,
  nowMs: number,
  queued: number,
): number | null {
  if (!isBounded(bounds)) return calendar.nextToEnqueue(tick, nowMs, catchUp);
  if (bounds.limit !== undefined && queued >= bounds.limit) return null;
  if (bounds.endDate !== undefined && nowMs > bounds.endDate) return null;
  let next = calendar.nextToEnqueue(tick, nowMs, catchUp);
  if (next !== null && bounds.startDate !== undefined && next < bounds.startDate)
    next = calendar.after(Math.max(tick, bounds.startDate - 1));
  return next !== null && bounds.endDate !== undefined && next > bounds.endDate ? null : next;
}

/**
 * Whether a bounded schedule whose last queued tick is `tick` will queue no other: `limit` is used
 * up, or no tick after `tick` falls before `endDate` (or the server clock passed it). An unbounded
 * schedule is never finished (its calendar is not even built).
 */
export function isFinished(calendar: () => TickCalendar, bounds: RepeatBounds, tick: number, nowMs: number, queued: number): boolean {
  if (bounds.limit !== undefined && queued >= bounds.limit) return true;
  if (bounds.endDate === undefined) return false;
  if (nowMs > bounds.endDate) return true;
  const next = calendar().after(bounds.startDate === undefined ? tick : Math.max(tick, bounds.startDate - 1));
  return next === null || next > bounds.endDate;
}

function epochMs(option: string, value: unknown, validate: OptionValidator): number | undefined {
  if (value === undefined) return undefined;
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0 || ms > LATEST_DATE_MS) {
    return validate.refuseValue(option, value, 'use a valid Date or epoch ms between 1970 and 2100');
  }
  return ms;
}

function withoutUndefined(bounds: { limit?: number; startDate?: number; endDate?: number }): RepeatBounds {
  return Object.fromEntries(Object.entries(bounds).filter(([, value]) => value !== undefined)) as RepeatBounds;
}
