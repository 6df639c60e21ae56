import { DelayQueueService, InvalidJobError, InvalidOptionsError } from '../../lib/index.js';
import { refusal } from '../support/refusal.js';
import { useLockApp } from '../support/test-app.js';

/** Unknown keys in the options of a delayed-job call are refused before anything is written. */
describe('Unknown call option keys of DelayQueueService are refused, with did you mean', () => {
  const lockApp = useLockApp();
  const queue = () => lockApp.app().get(DelayQueueService);

  it('schedule(t, p, { dealy }) is refused, and nothing is scheduled', async () => {
    const error = await refusal(() => queue().schedule('calls.schedule', 1, { dealy: 60_000, id: 'j1' } as never));
    expect(error).toBeInstanceOf(InvalidJobError);
    expect((error as InvalidJobError).field).toBe('dealy');
    expect(error.message).toContain('did you mean `delay`?');
    expect(await queue().get('calls.schedule', 'j1')).toBeNull();
  });

  it('schedule(t, p, { backoff: { dealy } }) is refused at the nested key, and nothing is scheduled', async () => {
    const error = await refusal(() => queue().schedule('calls.backoff', 1, { id: 'b1', backoff: { dealy: 10 } } as never));
    expect(error).toBeInstanceOf(InvalidJobError);
    expect((error as InvalidJobError).field).toBe('backoff.dealy');
    expect(error.message).toContain('did you mean `delay`?');
    expect(await queue().get('calls.backoff', 'b1')).toBeNull();
    const array = await refusal(() => queue().schedule('calls.backoff', 1, { id: 'b1', backoff: [] } as never));
    expect(array).toBeInstanceOf(InvalidJobError);
    expect((array as InvalidJobError).field).toBe('backoff');
    expect(await queue().get('calls.backoff', 'b1')).toBeNull();
  });

  it('scheduleMany items name the item', async () => {
    const error = await refusal(() => queue().scheduleMany('calls.many', [{ payload: 1 }, { payload: 2, maxAtempts: 3 } as never]));
    expect(error).toBeInstanceOf(InvalidJobError);
    expect((error as InvalidJobError).field).toBe('jobs[1].maxAtempts');
    expect(error.message).toContain('did you mean `maxAttempts`?');
  });

  it('reschedule(t, id, { dealy }) is refused', async () => {
    await queue().schedule('calls.reschedule', 1, { delay: 60_000, id: 'r1' });
    const error = await refusal(() => queue().reschedule('calls.reschedule', 'r1', { dealy: 5 } as never));
    expect(error).toBeInstanceOf(InvalidJobError);
    expect((error as InvalidJobError).field).toBe('dealy');
    expect(error.message).toContain('did you mean `delay`?');
    expect(await queue().cancel('calls.reschedule', 'r1')).toBe(true);
  });

  it('repeat(t, { cron, timezone }) and repeat(t, s, { catchup }) are refused', async () => {
    const schedule = await refusal(() => queue().repeat('calls.repeat', { cron: '0 2 * * *', timezone: 'UTC' } as never));
    expect(schedule).toBeInstanceOf(InvalidOptionsError);
    expect((schedule as InvalidOptionsError).option).toBe('repeat.schedule.timezone');
    expect(schedule.message).toContain('did you mean `timeZone`?');
    const options = await refusal(() => queue().repeat('calls.repeat', { every: 60_000 }, { catchup: 'all' } as never));
    expect(options).toBeInstanceOf(InvalidOptionsError);
    expect((options as InvalidOptionsError).option).toBe('repeat.catchup');
    expect(options.message).toContain('did you mean `catchUp`?');
    expect(await queue().listRepeats('calls.repeat')).toEqual([]);
  });

  it('deadLetters(t, { limt }) is refused', async () => {
    const error = await refusal(() => queue().deadLetters('calls.dead', { limt: 5 } as never));
    expect(error).toBeInstanceOf(InvalidOptionsError);
    expect((error as InvalidOptionsError).option).toBe('deadLetters.limt');
    expect(error.message).toContain('did you mean `limit`?');
  });
});
