import type { RepeatInfo } from '../interfaces/repeat-options.interface.js';
import type { RepeatDefinition } from '../repeat/repeat-definition.js';

/**
 * What `repeat()` inside an outboxed transaction can tell without Redis: the schedule's id and
 * definition, and `nextRunAt` estimated as the calendar's first tick after the local clock's now.
 * Redis keeps the tick it already queued when the same definition is stored, and computes the first
 * tick of a new one from its own clock when the row is applied after COMMIT, so the real next run
 * may differ (`listRepeats()` after the commit reads it). No `lastRunAt`: the history is in Redis.
 */
export function pendingRepeatInfo(topic: string, definition: RepeatDefinition): RepeatInfo {
  const next = definition.calendar.after(Date.now());
  return {
    topic,
    id: definition.id,
    schedule: definition.schedule,
    catchUp: definition.catchUp,
    nextRunAt: new Date(next ?? Date.now()),
    pending: true,
  };
}
