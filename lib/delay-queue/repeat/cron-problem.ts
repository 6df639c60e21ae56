import { errorMessage } from '../../core/errors/error-message.js';

/** Our name of each cron field, and what it takes (docs/scheduling.md). */
const FIELDS = [
  { name: 'second', croner: 'second', takes: '0-59' },
  { name: 'minute', croner: 'minute', takes: '0-59' },
  { name: 'hour', croner: 'hour', takes: '0-23' },
  { name: 'day-of-month', croner: 'day', takes: '1-31, L or W forms' },
  { name: 'month', croner: 'month', takes: '1-12 or JAN-DEC' },
  { name: 'day-of-week', croner: 'dayOfWeek', takes: '0-7 or SUN-SAT' },
] as const;

/**
 * Why croner refused `pattern` (a 5- or 6-field pattern, or a nickname), in words about what the
 * user wrote: croner's messages show its own rewrite of the field (names replaced by numbers,
 * `MON-XYZ` as `1-XYZ`), a shifted value (day `32` as `31`) and a position counting a seconds field
 * the user may not have written. Without a closing stop, to sit inside a sentence.
 */
export function cronProblem(pattern: string, error: unknown): string {
  const croner = errorMessage(error)
    .replace(/^CronPattern:\s*/, '')
    .replace(/[.\s]+$/, '');
  const parts = pattern.trim().split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) return croner;
  // croner puts a seconds field in front of a 5-field pattern: its entry 0 is always the seconds.
  const fields = parts.length === 6 ? FIELDS : FIELDS.slice(1);
  const offset = parts.length === 6 ? 0 : 1;
  const entry = /configuration entry (\d+)/.exec(croner);
  const named = /Invalid value for (\w+)/.exec(croner);
  const index = entry ? Number(entry[1]) - offset : named ? fields.findIndex((f) => f.croner === named[1]) : -1;
  const field = fields[index];
  if (!field) return croner;
  const problem = entry ? 'is not a valid value' : 'is out of range';
  return (
    `the ${field.name} field ${JSON.stringify(parts[index])} ${problem}: it takes ${field.takes}, with ` +
    `lists (,), ranges (-) and steps (/)`
  );
}
