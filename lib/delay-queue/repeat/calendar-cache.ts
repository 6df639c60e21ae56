import type { RepeatSchedule } from '../interfaces/repeat-options.interface.js';
import { TickCalendar } from './tick-calendar.js';

/**
 * Calendars kept at most: a parsed time-zone cron is about 80 kB, so at most about 5 MB. Schedules
 * with the same `schedule` share one, whatever their id, payload or topic; the check needs one only
 * for a schedule whose tick is missing or stale, a consumer for each tick it claims.
 */
const MAX_CALENDARS = 64;
/** Schedules known to build (a short string each): reading a stored definition checks it once. */
const MAX_KNOWN_GOOD = 10_000;

/** Least recently used first (a Map keeps insertion order; a hit moves its entry to the end). */
const calendars = new Map<string, TickCalendar>();
const knownGood = new Set<string>();

/** The calendar of `schedule`, shared by every definition with the same schedule. @throws for a schedule croner refuses */
export function calendarOf(schedule: RepeatSchedule): TickCalendar {
  const key = keyOf(schedule);
  const cached = calendars.get(key);
  if (cached) {
    calendars.delete(key);
    calendars.set(key, cached);
    return cached;
  }
  const calendar = TickCalendar.of(schedule);
  calendars.set(key, calendar);
  if (calendars.size > MAX_CALENDARS) calendars.delete(calendars.keys().next().value!);
  remember(key);
  return calendar;
}

/** Whether a calendar can be built for `schedule` (built once per schedule, then remembered). */
export function canBuildCalendar(schedule: RepeatSchedule): boolean {
  if (knownGood.has(keyOf(schedule))) return true;
  try {
    calendarOf(schedule);
    return true;
  } catch {
    return false;
  }
}

function remember(key: string): void {
  knownGood.add(key);
  if (knownGood.size > MAX_KNOWN_GOOD) knownGood.delete(knownGood.values().next().value!);
}

function keyOf(schedule: RepeatSchedule): string {
  return 'every' in schedule ? `e${schedule.every}` : `c${schedule.timeZone ?? ''}\n${schedule.cron}`;
}
