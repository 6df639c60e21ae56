import { DelayQueueService, InvalidJobError, InvalidOptionsError } from '../../lib/index.js';
import { refusal } from '../support/refusal.js';
import { useLockApp } from '../support/test-app.js';

/** What docs/scheduling.md and the README promise about refused input, checked against the code. */
describe('refusals agree with the docs', () => {
  const lockApp = useLockApp();
  const queue = () => lockApp.app().get(DelayQueueService);

  describe('cron patterns: 5 fields, or 6 with seconds (docs/scheduling.md)', () => {
    it('accepts 5 and 6 fields', async () => {
      expect((await queue().repeat('cron.five', { cron: '0 2 * * *' })).id).toBe('cron.five');
      expect((await queue().repeat('cron.six', { cron: '30 0 2 * * *' })).id).toBe('cron.six');
      expect(await queue().removeRepeat('cron.five')).toBe(true);
      expect(await queue().removeRepeat('cron.six')).toBe(true);
    });

    it.each([
      ['seven fields', '0 0 2 * * * 2030'],
      ['two fields', '* *'],
      ['words', 'not a cron'],
    ])('refuses %s, saying 5 fields or 6 with seconds, in one clean sentence', async (_label, cron) => {
      const error = await refusal(() => queue().repeat('cron.bad', { cron }));
      expect(error).toBeInstanceOf(InvalidOptionsError);
      expect(error.message).toContain('schedule.cron');
      expect(error.message).toMatch(/5 fields.*or 6 with seconds/);
      expect(error.message).not.toMatch(/seven/);
      expect(error.message).not.toMatch(/[.;][.;]|\.\s*;/);
    });

    it('a value croner refuses (minute 60) is reported without a doubled stop', async () => {
      const error = await refusal(() => queue().repeat('cron.bad', { cron: '60 * * * *' }));
      expect(error).toBeInstanceOf(InvalidOptionsError);
      expect(error.message).toContain('schedule.cron');
      expect(error.message).toMatch(/minute/);
      expect(error.message).not.toMatch(/[.;][.;]|\.\s*;|CronPattern/);
    });

    it.each([
      ['a minute out of range', '61 * * * *', 'minute', '"61"', /0-59/],
      ['a day of month out of range (croner says 31)', '0 0 32 * *', 'day-of-month', '"32"', /1-31/],
      ['a day-of-week name croner does not know', '0 0 * * MON-XYZ', 'day-of-week', '"MON-XYZ"', /SUN-SAT/],
      ['a month name croner does not know', '0 0 * JAN-XYZ *', 'month', '"JAN-XYZ"', /JAN-DEC/],
      ['a seconds field of a 6-field pattern', '7x 0 0 * * *', 'second', '"7x"', /0-59/],
    ])('%s: names the field and the text the user wrote, without the field-count hint', async (_label, cron, field, text, range) => {
      const error = await refusal(() => queue().repeat('cron.bad', { cron }));
      expect(error).toBeInstanceOf(InvalidOptionsError);
      expect(error.message).toContain(JSON.stringify(cron));
      expect(error.message).toContain(`${field} field ${text}`);
      expect(error.message).toMatch(range);
      expect(error.message).not.toMatch(/use 5 fields|1-XYZ|day: 31|configuration entry|CronPattern/);
      expect(error.message).not.toMatch(/[.;][.;]|\.\s*;/);
    });
  });

  describe('payloads (docs/delayed-jobs.md): an undefined property is left out, as JSON does; an undefined in an array is refused', () => {
    it.each<[string, Record<string, unknown>, Record<string, unknown>]>([
      ['an undefined property', { u: undefined }, {}],
      ['an undefined property beside data', { id: 1, note: undefined }, { id: 1 }],
      ['a nested undefined property', { order: { id: 1, coupon: undefined } }, { order: { id: 1 } }],
    ])('%s: scheduled, and stored without the key', async (_label, payload, stored) => {
      const id = await queue().schedule('payload.undefined', payload, { delay: 60_000 });
      expect((await queue().get('payload.undefined', id))?.payload).toEqual(stored);
      const [batchId] = await queue().scheduleMany('payload.undefined', [{ payload, delay: 60_000 }]);
      expect((await queue().get('payload.undefined', batchId))?.payload).toEqual(stored);
    });

    it('an undefined in an array (JSON would make it null) is refused, naming its path', async () => {
      const error = await refusal(() => queue().schedule('payload.undefined', { list: [1, undefined] }, { delay: 60_000 }));
      expect(error).toBeInstanceOf(InvalidJobError);
      expect((error as InvalidJobError).field).toBe('payload.list[1]');
      expect(error.message).toMatch(/use null/);
    });
  });
});
