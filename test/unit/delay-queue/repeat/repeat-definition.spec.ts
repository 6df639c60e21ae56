import { InvalidJobError, InvalidOptionsError } from '../../../../lib/index.js';
import { resolveRedisLockConfig } from '../../../../lib/core/options/resolve-redis-lock-config.js';
import { prepareRepeat, readStoredForm, storedForm } from '../../../../lib/delay-queue/repeat/repeat-definition.js';
import { parseTickJobId, tickJobId } from '../../../../lib/delay-queue/jobs/tick-job-id.js';

const defaults = resolveRedisLockConfig({}).delayQueue;

describe('prepareRepeat', () => {
  it('defaults the id to the topic and catchUp to latest', () => {
    expect(prepareRepeat('report', { every: 1_000 }, undefined, defaults)).toMatchObject({
      id: 'report',
      catchUp: 'latest',
      schedule: { every: 1_000 },
    });
  });

  it('gives the same definition the same fingerprint on every instance, and another one another', () => {
    const a = prepareRepeat('t', { cron: '0 2 * * *', timeZone: 'Europe/Warsaw' }, { payload: { x: 1 } }, defaults);
    const b = prepareRepeat('t', { timeZone: 'Europe/Warsaw', cron: '0 2 * * *' }, { payload: { x: 1 } }, defaults);
    expect(a.fingerprint).toBe(b.fingerprint);
    expect(prepareRepeat('t', { cron: '0 2 * * *' }, { payload: { x: 1 } }, defaults).fingerprint).not.toBe(a.fingerprint);
    expect(prepareRepeat('t', { cron: '0 2 * * *', timeZone: 'Europe/Warsaw' }, { payload: { x: 2 } }, defaults).fingerprint).not.toBe(
      a.fingerprint,
    );
    expect(
      prepareRepeat('t', { cron: '0 2 * * *', timeZone: 'Europe/Warsaw' }, { payload: { x: 1 }, catchUp: 'all' }, defaults).fingerprint,
    ).not.toBe(a.fingerprint);
  });

  it('reads back what it stores', () => {
    const definition = prepareRepeat('t', { every: 500 }, { id: 'x', payload: [1, 'two'], maxAttempts: 3, catchUp: 'none' }, defaults);
    const read = readStoredForm('x', storedForm(definition))!;
    expect({ ...read, calendar: undefined }).toEqual({ ...definition, calendar: undefined });
  });

  it.each([
    [{ every: 10 }, /schedule\.every/],
    [{ every: 1.5 }, /schedule\.every/],
    [{ every: 1_000, timeZone: 'UTC' }, /schedule\.timeZone/],
    [{}, /exactly one/],
    [{ cron: 'every day' }, /schedule\.cron/],
    [{ cron: '0 0 30 2 *' }, /no future run/],
    [{ cron: '0 0 0 1 1 * 2001' }, /has 7 fields; use 5 fields .*or 6 with seconds first/],
    [{ cron: '* * * * *', timeZone: 'Nowhere/Town' }, /schedule\.timeZone/],
  ])('refuses the schedule %j with InvalidOptionsError naming the option', (schedule, message) => {
    expect(() => prepareRepeat('t', schedule as never, undefined, defaults)).toThrow(InvalidOptionsError);
    expect(() => prepareRepeat('t', schedule as never, undefined, defaults)).toThrow(message);
  });

  it('refuses a bad id, catchUp or payload before anything is written', () => {
    expect(() => prepareRepeat('t', { every: 1_000 }, { id: '' }, defaults)).toThrow(/repeat\.id/);
    expect(() => prepareRepeat('t', { every: 1_000 }, { id: 'x'.repeat(1_004) }, defaults)).toThrow(/repeat\.id/);
    expect(() => prepareRepeat('t', { every: 1_000 }, { catchUp: 'most' as never }, defaults)).toThrow(/repeat\.catchUp/);
    expect(() => prepareRepeat('t', { every: 1_000 }, { payload: 1n }, defaults)).toThrow(InvalidJobError);
  });
});

describe('tick job ids', () => {
  it('name the schedule and the tick, and read back even when the schedule id holds @ or :', () => {
    for (const id of ['daily', 'a@b', 'x:y@1', 'ü']) {
      expect(parseTickJobId(tickJobId(id, 1_764_000_000_000))).toEqual({ scheduleId: id, tickMs: 1_764_000_000_000 });
    }
    expect(parseTickJobId('order-1')).toBeUndefined();
  });
});
