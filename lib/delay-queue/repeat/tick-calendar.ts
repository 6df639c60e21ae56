import { Cron } from 'croner';
import type { RepeatCatchUp, RepeatSchedule } from '../interfaces/repeat-options.interface.js';

/** Missed ticks `catchUp: 'all'` runs at most (the most recent ones). */
export const MAX_CATCH_UP_TICKS = 1000;

/**
 * How late a tick must be to count as missed, in ms. A tick only a little late (consumers behind
 * a busy moment, a tick redelivered after a crash) is still queued and run: the catch-up rule is for
 * downtime, not for lag.
 */
export const MISSED_TICK_AFTER_MS = 3_000;

/**
 * The ticks of one schedule, as pure functions of time: no timer, no clock of its own. Every
 * instance asks it with the Redis server's time, so all of them agree on every tick.
 */
export abstract class TickCalendar {
  /** The first tick strictly after `ms`; null when the schedule has no more ticks (a cron that ends). */
  abstract after(ms: number): number | null;

  /** The `n`-th most recent tick at or before `ms` (n = 1: the latest); null when there are fewer than `n`. */
  abstract atOrBefore(ms: number, n?: number): number | null;

  static of(schedule: RepeatSchedule): TickCalendar {
    return 'every' in schedule ? new EveryCalendar(schedule.every) : new CronCalendar(schedule.cron, schedule.timeZone);
  }

  /**
   * The tick to enqueue after `tick` (the one queued last), at server time `nowMs`, following the
   * catch-up rule for the ticks that are missed (more than `MISSED_TICK_AFTER_MS` past):
   * - none missed (the next tick is in the future, or late by less than that): that tick;
   * - `none`: the first tick after now (missed ones are skipped);
   * - `latest`: the most recent missed tick (it runs at once), then the schedule goes on from there;
   * - `all`: the oldest missed tick not older than the last `MAX_CATCH_UP_TICKS` (the ones after it
   *   follow one by one as each is claimed).
   * Always later than `tick`, so a tick, once enqueued, is never enqueued again. Null: no more ticks.
   */
  nextToEnqueue(tick: number, nowMs: number, catchUp: RepeatCatchUp): number | null {
    const following = this.after(tick);
    if (following === null || following > nowMs - MISSED_TICK_AFTER_MS) return following;
    if (catchUp === 'none') return this.after(nowMs);
    if (catchUp === 'latest') return this.atOrBefore(nowMs) ?? following;
    const oldestKept = this.atOrBefore(nowMs, MAX_CATCH_UP_TICKS);
    return oldestKept === null ? following : Math.max(following, oldestKept);
  }
}

/** Ticks at whole multiples of `every` ms since the epoch. */
class EveryCalendar extends TickCalendar {
  constructor(private readonly every: number) {
    super();
  }

  after(ms: number): number {
    return (Math.floor(ms / this.every) + 1) * this.every;
  }

  atOrBefore(ms: number, n = 1): number {
    return (Math.floor(ms / this.every) - (n - 1)) * this.every;
  }
}

/** Ticks of a cron pattern in a time zone (croner: DST gaps and repeats handled through Intl). */
class CronCalendar extends TickCalendar {
  private readonly cron: Cron;

  constructor(pattern: string, timeZone?: string) {
    super();
    this.cron = new Cron(pattern, { timezone: timeZone, paused: true });
  }

  after(ms: number): number | null {
    return this.cron.nextRun(new Date(ms))?.getTime() ?? null;
  }

  atOrBefore(ms: number, n = 1): number | null {
    // previousRuns counts strictly before its reference: one ms later includes a tick at `ms`.
    const runs = this.cron.previousRuns(n, new Date(ms + 1));
    return runs.length < n ? null : runs[n - 1].getTime();
  }
}
