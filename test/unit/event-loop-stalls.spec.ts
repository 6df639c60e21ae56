import { watchEventLoopStalls } from '../support/event-loop-stalls.js';
import { sleep } from '../support/timing.js';

/** Blocks this process's event loop for `ms` (a stand-in for a GC pause or a descheduled process). */
function block(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end);
}

describe("watchEventLoopStalls (the time a spec's bound on the library's own delay subtracts)", () => {
  it('counts a stall inside the span, and only the part inside it', async () => {
    const stalls = watchEventLoopStalls();
    try {
      await sleep(50);
      const from = Date.now();
      block(400);
      await sleep(50);
      const to = Date.now();
      expect(stalls.within(from, to)).toBeGreaterThanOrEqual(350);
      expect(stalls.within(from, to)).toBeLessThanOrEqual(to - from);
      expect(stalls.within(from + 200, to)).toBeLessThanOrEqual(to - from - 200);
      expect(stalls.within(to, to + 1_000)).toBe(0);
      expect(stalls.runnableSince(from)).toBeLessThan(Date.now() - from - 350);
    } finally {
      stalls.stop();
    }
  });
});
