import { calendarOf, canBuildCalendar } from '../../../../lib/delay-queue/repeat/calendar-cache.js';
import { prepareRepeat, readStoredForm, storedForm } from '../../../../lib/delay-queue/repeat/repeat-definition.js';
import { resolveRedisLockConfig } from '../../../../lib/core/options/resolve-redis-lock-config.js';

const defaults = resolveRedisLockConfig({}).delayQueue;

describe('calendar cache', () => {
  it('shares one calendar between definitions with the same schedule, whatever their id or payload', () => {
    const schedule = { cron: '0 3 * * *', timeZone: 'Europe/Warsaw' };
    const a = prepareRepeat('t', schedule, { id: 'a', payload: 1 }, defaults);
    const b = readStoredForm(
      'b',
      storedForm(prepareRepeat('u', { timeZone: 'Europe/Warsaw', cron: '0 3 * * *' }, { id: 'b', payload: 2 }, defaults)),
    )!;
    expect(a.calendar).toBe(b.calendar);
    expect(calendarOf(schedule)).toBe(a.calendar);
    expect(calendarOf({ cron: '0 3 * * *' })).not.toBe(a.calendar);
  });

  it('keeps a bounded number of calendars, least recently used out first', () => {
    const first = calendarOf({ cron: '0 0 1 1 *', timeZone: 'Asia/Tokyo' });
    for (let minute = 0; minute < 64; minute++)
      calendarOf({ cron: `${minute % 60} ${Math.floor(minute / 60) + 1} * * *`, timeZone: 'Asia/Tokyo' });
    expect(calendarOf({ cron: '0 0 1 1 *', timeZone: 'Asia/Tokyo' })).not.toBe(first);
  });

  it('tells a stored schedule it cannot build', () => {
    expect(canBuildCalendar({ cron: '0 2 * * *' })).toBe(true);
    expect(canBuildCalendar({ cron: 'not a cron' })).toBe(false);
    const good = storedForm(prepareRepeat('t', { every: 1_000 }, undefined, defaults));
    expect(readStoredForm('t', good)).toBeDefined();
    expect(readStoredForm('t', good.slice(0, 40) + JSON.stringify({ s: { cron: 'not a cron' }, k: 'latest', t: '}' }))).toBeUndefined();
    expect(readStoredForm('t', good.slice(0, 40) + JSON.stringify({ s: { every: 'soon' }, k: 'latest', t: '}' }))).toBeUndefined();
    expect(readStoredForm('t', good.slice(0, 40) + JSON.stringify({ s: { every: 1_000 }, k: 'sometimes', t: '}' }))).toBeUndefined();
  });
});
