import type { RepeatInfo } from '../interfaces/repeat-options.interface.js';
import { firstTickWithin } from '../repeat/repeat-bounds.js';
import type { RepeatDefinition } from '../repeat/repeat-definition.js';

/**
 * What `repeat()` inside an outboxed transaction can tell without Redis: the schedule's id and
 * definition (its bounds with it: they travel in the row's stored form), and `nextRunAt` estimated
 * as the calendar's first tick within the bounds after the local clock's now. Redis keeps the tick
 * it already queued when the same definition is stored, and computes the first tick of a new one
 * from its own clock when the row is applied after COMMIT, so the real next run may differ
 * (`listRepeats()` after the commit reads it). No `lastRunAt` and `runs` 0: the history is in Redis.
 */
export function pendingRepeatInfo(topic: string, definition: RepeatDefinition): RepeatInfo {
  const { limit, startDate, endDate } = definition.bounds;
  const next = firstTickWithin(definition.calendar, definition.bounds, Date.now());
  return {
    topic,
    id: definition.id,
    schedule: definition.schedule,
    catchUp: definition.catchUp,
    nextRunAt: new Date(next ?? Date.now()),
    runs: 0,
    ...(limit === undefined ? {} : { limit }),
    ...(startDate === undefined ? {} : { startDate: new Date(startDate) }),
    ...(endDate === undefined ? {} : { endDate: new Date(endDate) }),
    pending: true,
  };
}
