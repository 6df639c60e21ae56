import { PREFETCH_WINDOW_MS, SlotTurnover } from '../../../../lib/delay-queue/consumer/slot-turnover.js';

describe('SlotTurnover (how many jobs a consumer may claim ahead of its free slots)', () => {
  it('counts short handlers that finished within the window, up to its capacity', () => {
    const turnover = new SlotTurnover(3);
    turnover.claimSent();
    expect(turnover.recent(1_000)).toBe(0);
    turnover.finished(5, 1_000);
    turnover.finished(5, 1_010);
    turnover.claimSent();
    expect(turnover.recent(1_020)).toBe(2);
    // The first finish leaves the window, then the second.
    expect(turnover.recent(1_000 + PREFETCH_WINDOW_MS + 1)).toBe(1);
    expect(turnover.recent(1_010 + PREFETCH_WINDOW_MS + 1)).toBe(0);
    for (let i = 0; i < 5; i++) turnover.finished(1, 2_000 + i);
    expect(turnover.recent(2_010)).toBe(3);
  });

  it('never counts a long handler: its slot says nothing about the next one freeing soon', () => {
    const turnover = new SlotTurnover(2);
    turnover.finished(PREFETCH_WINDOW_MS, 1_000);
    turnover.finished(12_000, 1_000);
    expect(turnover.recent(1_000)).toBe(0);
  });

  it('counts the finishes since the last claim even when the event loop was slow to send the next one', () => {
    const turnover = new SlotTurnover(4);
    turnover.claimSent();
    turnover.finished(2, 1_000);
    turnover.finished(2, 1_001);
    // 500 ms later (a stalled event loop): outside the window, but nothing has been claimed for them yet.
    expect(turnover.recent(1_500)).toBe(2);
    turnover.claimSent();
    expect(turnover.recent(1_500)).toBe(0);
  });
});
