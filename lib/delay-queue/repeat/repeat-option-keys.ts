import { keysOf } from '../../core/options/known-option-keys.js';
import type { OnDelayedRepeat, RepeatOptions, RepeatSchedule } from '../interfaces/repeat-options.interface.js';

type EverySchedule = Extract<RepeatSchedule, { every: number }>;
type CronSchedule = Extract<RepeatSchedule, { cron: string }>;

/** The keys a `RepeatSchedule` may have (`every`, or `cron` with `timeZone`). */
export const REPEAT_SCHEDULE_KEYS = keysOf<EverySchedule & CronSchedule>()(['every', 'cron', 'timeZone']);

/** The keys of `repeat()`'s options. */
export const REPEAT_OPTION_KEYS = keysOf<RepeatOptions>()([
  'id',
  'payload',
  'catchUp',
  'maxAttempts',
  'backoff',
  'limit',
  'startDate',
  'endDate',
]);

/** The keys of `@OnDelayed`'s `repeat`: a schedule and its options in one object. */
export const ON_DELAYED_REPEAT_KEYS: readonly string[] = [...REPEAT_SCHEDULE_KEYS, ...REPEAT_OPTION_KEYS];

/** `@OnDelayed`'s `repeat` split into the schedule and the options of `repeat()` (keys of neither stay with the schedule). */
export function splitOnDelayedRepeat(repeat: OnDelayedRepeat): { schedule: RepeatSchedule; options: RepeatOptions } {
  const schedule: Record<string, unknown> = {};
  const options: Record<string, unknown> = {};
  const optionKeys: readonly string[] = REPEAT_OPTION_KEYS;
  for (const [key, value] of Object.entries(repeat ?? {})) (optionKeys.includes(key) ? options : schedule)[key] = value;
  return { schedule: schedule as RepeatSchedule, options: options as RepeatOptions };
}
