import { MAX_CATCH_UP_TICKS, MISSED_TICK_AFTER_MS, TickCalendar } from '../../../../lib/delay-queue/repeat/tick-calendar.js';

const utc = (iso: string) => Date.parse(iso);

describe('TickCalendar', () => {
  describe('every', () => {
    const every = TickCalendar.of({ every: 1_000 });

    it('ticks at whole multiples of `every` since the epoch, strictly after the given time', () => {
      expect(every.after(10_000)).toBe(11_000);
      expect(every.after(10_999)).toBe(11_000);
      expect(every.atOrBefore(10_000)).toBe(10_000);
      expect(every.atOrBefore(10_999)).toBe(10_000);
      expect(every.atOrBefore(10_999, 3)).toBe(8_000);
    });
  });

  describe('cron', () => {
    it('reads the pattern in its time zone, across a daylight-saving change', () => {
      const daily = TickCalendar.of({ cron: '0 2 * * *', timeZone: 'Europe/Warsaw' });
      // 2026-03-29: 02:00 does not exist in Warsaw (clocks go 02:00 -> 03:00); croner runs it at 03:00 CEST.
      expect(daily.after(utc('2026-03-28T12:00:00Z'))).toBe(utc('2026-03-29T01:00:00Z'));
      expect(daily.after(utc('2026-03-29T12:00:00Z'))).toBe(utc('2026-03-30T00:00:00Z'));
      expect(daily.atOrBefore(utc('2026-01-10T01:00:00Z'))).toBe(utc('2026-01-10T01:00:00Z'));
      expect(daily.atOrBefore(utc('2026-01-10T00:59:59Z'))).toBe(utc('2026-01-09T01:00:00Z'));
    });

    it('uses UTC without a time zone, and seconds with six fields', () => {
      expect(TickCalendar.of({ cron: '0 2 * * *' }).after(utc('2026-01-01T00:00:00Z'))).toBe(utc('2026-01-01T02:00:00Z'));
      expect(TickCalendar.of({ cron: '*/5 * * * * *' }).after(utc('2026-01-01T00:00:07Z'))).toBe(utc('2026-01-01T00:00:10Z'));
    });
  });

  describe('nextToEnqueue (catch-up)', () => {
    const every = TickCalendar.of({ every: 100 });

    // Past the grace that tells a missed tick from a late one.
    const later = 1_000 + MISSED_TICK_AFTER_MS;

    it('without missed ticks: the following tick, whatever the rule, also when it is late by less than the grace', () => {
      for (const rule of ['none', 'latest', 'all'] as const) {
        expect(every.nextToEnqueue(1_000, 1_050, rule)).toBe(1_100);
        expect(every.nextToEnqueue(1_000, 1_100 + MISSED_TICK_AFTER_MS - 1, rule)).toBe(1_100);
      }
    });

    it("'none' skips the missed ticks: the first tick after now", () => {
      expect(every.nextToEnqueue(1_000, later + 750, 'none')).toBe(later + 800);
    });

    it("'latest' runs the most recent missed tick once", () => {
      expect(every.nextToEnqueue(1_000, later + 750, 'latest')).toBe(later + 700);
    });

    it("'all' runs every missed tick in order, at most the last MAX_CATCH_UP_TICKS", () => {
      expect(every.nextToEnqueue(1_000, later + 750, 'all')).toBe(1_100);
      const now = 1_000 + 5_000 * 100;
      expect(every.nextToEnqueue(1_000, now, 'all')).toBe(now - (MAX_CATCH_UP_TICKS - 1) * 100);
    });

    it('is always later than the tick it follows, so a tick is never enqueued twice', () => {
      const cron = TickCalendar.of({ cron: '*/10 * * * * *' });
      const tick = utc('2026-01-01T00:00:00Z');
      for (const now of [tick, tick + 9_999, tick + 10_000, tick + 3_600_000]) {
        for (const rule of ['none', 'latest', 'all'] as const) {
          expect(cron.nextToEnqueue(tick, now, rule)!).toBeGreaterThan(tick);
          expect(every.nextToEnqueue(tick, now, rule)).toBeGreaterThan(tick);
        }
      }
    });

    it('null when a cron has no more ticks', () => {
      const once = TickCalendar.of({ cron: '0 0 0 1 1 * 2027' });
      expect(once.after(utc('2027-06-01T00:00:00Z'))).toBeNull();
    });
  });
});
