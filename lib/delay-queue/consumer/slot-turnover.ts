/**
 * Handlers that ran for less than this and finished this recently count as slots about to free up
 * again (see `SlotTurnover`).
 */
export const PREFETCH_WINDOW_MS = 100;

/**
 * A consumer claims ahead of its free slots at most this many times its concurrency: with handlers
 * that finish within microseconds, a claim round trip is what limits throughput, and each one may
 * then bring the jobs that many short handlers will have finished by the time the next one lands.
 */
export const PREFETCH_DEPTH = 4;

/**
 * How often a consumer's handler slots free up quickly, as the finish times of its last `capacity`
 * short handlers (ran less than PREFETCH_WINDOW_MS; a ring, oldest to newest; the runner gives it
 * PREFETCH_DEPTH times its concurrency). The consumer claims
 * ahead of its free slots (prefetch) only as many jobs as short handlers finished lately: within the
 * last PREFETCH_WINDOW_MS, or since its last claim was sent (a claim that replaces finished handlers
 * counts them even if the event loop was slow to send it). About as many slots will free up as
 * soon, so a prefetched job starts here about as early as on an idle consumer. With long handlers
 * the count is 0 and due jobs stay in the queue, where another consumer can take them.
 */
export class SlotTurnover {
  private readonly finishes: Float64Array;
  /** Where the next finish time goes. */
  private next = 0;
  private count = 0;
  /** Handlers finished since the last claim was sent. */
  private sinceClaim = 0;

  constructor(private readonly capacity: number) {
    this.finishes = new Float64Array(capacity);
  }

  /** A handler that ran `runMs` returned at `now` (`performance.now()`). */
  finished(runMs: number, now = performance.now()): void {
    if (runMs >= PREFETCH_WINDOW_MS) return;
    this.finishes[this.next] = now;
    this.next = (this.next + 1) % this.capacity;
    if (this.count < this.capacity) this.count++;
    this.sinceClaim++;
  }

  /** A claim is being sent: finishes from now on count towards the next one. */
  claimSent(): void {
    this.sinceClaim = 0;
  }

  /** Handlers finished within the last PREFETCH_WINDOW_MS or since the last claim (at most `capacity`). */
  recent(now = performance.now()): number {
    return Math.min(this.capacity, Math.max(this.sinceClaim, this.withinWindow(now)));
  }

  private withinWindow(now: number): number {
    const since = now - PREFETCH_WINDOW_MS;
    // Binary search for the oldest finish inside the window; k counts from the oldest kept.
    const at = (k: number) => this.finishes[(this.next - this.count + k + this.capacity) % this.capacity];
    let low = 0;
    let high = this.count;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (at(mid) >= since) high = mid;
      else low = mid + 1;
    }
    return this.count - low;
  }
}
