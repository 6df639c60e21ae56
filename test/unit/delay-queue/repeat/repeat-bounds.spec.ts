import { InvalidOptionsError } from '../../../../lib/index.js';
import { resolveRedisLockConfig } from '../../../../lib/core/options/resolve-redis-lock-config.js';
import { firstTickWithin, isFinished, nextTickWithin } from '../../../../lib/delay-queue/repeat/repeat-bounds.js';
import { prepareRepeat, readStoredForm, storedForm } from '../../../../lib/delay-queue/repeat/repeat-definition.js';
import { splitOnDelayedRepeat } from '../../../../lib/delay-queue/repeat/repeat-option-keys.js';
import { TickCalendar } from '../../../../lib/delay-queue/repeat/tick-calendar.js';

const defaults = resolveRedisLockConfig({}).delayQueue;
const every = TickCalendar.of({ every: 1_000 });
const T0 = Date.UTC(2030, 0, 1);

function refusal(options: Record<string, unknown>): string {
  try {
    prepareRepeat('t', { every: 1_000 }, options, defaults);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionsError);
    return (error as Error).message;
  }
  throw new Error('not refused');
}

describe('bounded repeat options', () => {
  it('keeps limit, startDate and endDate (a Date or epoch ms) in the stored form, and only when given', () => {
    const bounded = prepareRepeat('t', { every: 1_000 }, { limit: 3, startDate: new Date(T0), endDate: T0 + 60_000 }, defaults);
    expect(bounded.bounds).toEqual({ limit: 3, startDate: T0, endDate: T0 + 60_000 });
    expect(readStoredForm('t', storedForm(bounded))!.bounds).toEqual(bounded.bounds);
    // An unbounded schedule keeps the stored form (and fingerprint) it had before bounds existed.
    const plain = prepareRepeat('t', { every: 1_000 }, undefined, defaults);
    expect(plain.bounds).toEqual({});
    expect(storedForm(plain).slice(40)).toBe(JSON.stringify({ s: { every: 1_000 }, k: 'latest', t: plain.tail }));
    // Another bound is another definition (an upsert replaces the stored one).
    expect(prepareRepeat('t', { every: 1_000 }, { limit: 4 }, defaults).fingerprint).not.toBe(
      prepareRepeat('t', { every: 1_000 }, { limit: 3 }, defaults).fingerprint,
    );
  });

  it.each([
    [{ limit: 0 }, /repeat\.limit.*got 0; use a positive whole number/],
    [{ limit: 1.5 }, /repeat\.limit/],
    [{ limit: '3' }, /repeat\.limit.*the string "3"/],
    [{ startDate: new Date('nope') }, /repeat\.startDate.*an invalid Date/],
    [{ endDate: 'tomorrow' }, /repeat\.endDate.*the string "tomorrow"/],
    [{ endDate: -1 }, /repeat\.endDate/],
    [{ startDate: Date.UTC(2200, 0, 1) }, /repeat\.startDate.*between 1970 and 2100/],
    [{ startDate: T0, endDate: T0 }, /repeat\.endDate.*is not after startDate/],
    [{ startDate: T0 + 1, endDate: new Date(T0) }, /repeat\.endDate.*is not after startDate/],
    [{ limits: 3 }, /repeat\.limits.*limit/],
  ])('refuses %j with InvalidOptionsError naming the option', (options, message) => {
    expect(refusal(options)).toMatch(message);
  });

  it('reads @OnDelayed({ repeat }) bounds as options, not as schedule keys', () => {
    expect(splitOnDelayedRepeat({ every: 1_000, limit: 2, endDate: T0, id: 'x' })).toEqual({
      schedule: { every: 1_000 },
      options: { limit: 2, endDate: T0, id: 'x' },
    });
  });

  it('refuses a stored form whose bounds this version cannot read', () => {
    const good = storedForm(prepareRepeat('t', { every: 1_000 }, { limit: 2 }, defaults));
    const json = JSON.parse(good.slice(40)) as Record<string, unknown>;
    expect(readStoredForm('t', good.slice(0, 40) + JSON.stringify({ ...json, l: 0 }))).toBeUndefined();
    expect(readStoredForm('t', good.slice(0, 40) + JSON.stringify({ ...json, e: 'soon' }))).toBeUndefined();
  });
});

describe('ticks within bounds', () => {
  it('starts at the first tick from startDate on, or after now when startDate has passed; none when endDate leaves none', () => {
    expect(firstTickWithin(every, { startDate: T0 + 2_500 }, T0)).toBe(T0 + 3_000);
    expect(firstTickWithin(every, { startDate: T0 + 3_000 }, T0)).toBe(T0 + 3_000);
    expect(firstTickWithin(every, { startDate: T0 - 10_000 }, T0 + 100)).toBe(T0 + 1_000);
    expect(firstTickWithin(every, { endDate: T0 + 1_000 }, T0 + 100)).toBe(T0 + 1_000);
    expect(firstTickWithin(every, { endDate: T0 + 999 }, T0 + 100)).toBeNull();
    expect(firstTickWithin(every, { endDate: T0 }, T0 + 1)).toBeNull();
  });

  it('queues the next tick until the limit is reached, the server clock passes endDate or the next tick is after it', () => {
    expect(nextTickWithin(every, 'latest', { limit: 3 }, T0, T0, 2)).toBe(T0 + 1_000);
    expect(nextTickWithin(every, 'latest', { limit: 3 }, T0, T0, 3)).toBeNull();
    expect(nextTickWithin(every, 'latest', { endDate: T0 + 1_000 }, T0, T0, 1)).toBe(T0 + 1_000);
    expect(nextTickWithin(every, 'latest', { endDate: T0 + 999 }, T0, T0, 1)).toBeNull();
    // A missed tick before endDate is not caught up once the clock passed endDate.
    expect(nextTickWithin(every, 'all', { endDate: T0 + 5_000 }, T0, T0 + 5_001, 1)).toBeNull();
    expect(nextTickWithin(every, 'all', {}, T0, T0 + 5_001, 1)).toBe(T0 + 1_000);
  });

  it('does not catch up missed ticks before startDate', () => {
    // 'latest' after downtime would queue T0 + 9000; startDate at T0 + 9500 moves it to T0 + 10000.
    expect(nextTickWithin(every, 'latest', {}, T0, T0 + 9_500, 1)).toBe(T0 + 9_000);
    expect(nextTickWithin(every, 'latest', { startDate: T0 + 9_500 }, T0, T0 + 9_500, 1)).toBe(T0 + 10_000);
    expect(nextTickWithin(every, 'all', { startDate: T0 + 4_000 }, T0, T0 + 9_500, 1)).toBe(T0 + 4_000);
  });

  it('is finished when the limit is used up or no tick is left before endDate; an unbounded schedule never', () => {
    const calendar = () => every;
    expect(isFinished(calendar, { limit: 2 }, T0, T0, 2)).toBe(true);
    expect(isFinished(calendar, { limit: 2 }, T0, T0, 1)).toBe(false);
    expect(isFinished(calendar, { endDate: T0 + 1_000 }, T0, T0, 1)).toBe(false);
    expect(isFinished(calendar, { endDate: T0 + 999 }, T0, T0, 1)).toBe(true);
    expect(isFinished(calendar, { endDate: T0 + 5_000 }, T0, T0 + 5_001, 1)).toBe(true);
    expect(
      isFinished(
        () => {
          throw new Error('no calendar needed');
        },
        {},
        T0,
        T0 + 1e9,
        1e9,
      ),
    ).toBe(false);
  });
});
