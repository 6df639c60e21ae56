import { jest } from '@jest/globals';
import { settleWithin } from '../../../../lib/core/time/settle-within.js';
import { MAX_TIMER_MS, timerDelay } from '../../../../lib/core/time/timer-delay.js';

describe('settleWithin', () => {
  afterEach(() => jest.useRealTimers());

  it('is true for a promise that resolves in time, false once the budget is spent', async () => {
    expect(await settleWithin(Promise.resolve(), 1_000)).toBe(true);
    expect(await settleWithin(new Promise(() => undefined), 0)).toBe(false);
  });

  it("waits a budget of weeks in full, re-arming its timer at setTimeout's bound instead of firing after 1 ms", async () => {
    jest.useFakeTimers({ now: 0, doNotFake: ['nextTick', 'queueMicrotask'] });
    const thirtyDays = 2_592_000_000;
    let settled: boolean | undefined;
    void settleWithin(new Promise(() => undefined), thirtyDays).then((value) => (settled = value));
    await jest.advanceTimersByTimeAsync(MAX_TIMER_MS + 1_000);
    expect(settled).toBeUndefined();
    await jest.advanceTimersByTimeAsync(thirtyDays - MAX_TIMER_MS);
    expect(settled).toBe(false);
  });

  it('never ends an infinite budget', async () => {
    jest.useFakeTimers({ now: 0, doNotFake: ['nextTick', 'queueMicrotask'] });
    let settled: boolean | undefined;
    void settleWithin(new Promise(() => undefined), Number.POSITIVE_INFINITY).then((value) => (settled = value));
    await jest.advanceTimersByTimeAsync(3 * MAX_TIMER_MS);
    expect(settled).toBeUndefined();
  });
});

describe('timerDelay', () => {
  it('keeps a delay within what setTimeout honours', () => {
    expect(timerDelay(-5)).toBe(0);
    expect(timerDelay(1_000)).toBe(1_000);
    expect(timerDelay(2_592_000_000)).toBe(MAX_TIMER_MS);
    expect(timerDelay(Number.POSITIVE_INFINITY)).toBe(MAX_TIMER_MS);
  });
});
