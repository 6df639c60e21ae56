import { keysOf } from '../../core/options/known-option-keys.js';
import type { RepeatOptions, RepeatSchedule } from '../interfaces/repeat-options.interface.js';

type EverySchedule = Extract<RepeatSchedule, { every: number }>;
type CronSchedule = Extract<RepeatSchedule, { cron: string }>;

/** The keys a `RepeatSchedule` may have (`every`, or `cron` with `timeZone`). */
export const REPEAT_SCHEDULE_KEYS = keysOf<EverySchedule & CronSchedule>()(['every', 'cron', 'timeZone']);

/** The keys of `repeat()`'s options. */
export const REPEAT_OPTION_KEYS = keysOf<RepeatOptions>()(['id', 'payload', 'catchUp', 'maxAttempts', 'backoff']);

/** The keys of `@OnDelayed`'s `repeat`: a schedule and its options in one object. */
export const ON_DELAYED_REPEAT_KEYS: readonly string[] = [...REPEAT_SCHEDULE_KEYS, ...REPEAT_OPTION_KEYS];
