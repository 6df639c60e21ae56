/**
 * At most `limit` requests of ours in flight on one GLIDE client; the others wait their turn, in
 * order. GLIDE refuses a request beyond its `inflightRequestsLimit` (default 1000) at once with
 * "Reached maximum inflight requests", where ioredis would queue it: a burst of lock calls, or the
 * testing kit's removal of a thousand keys, must wait instead. A freed slot passes straight to the
 * next waiter, so the count never exceeds the limit. Requests the user makes on their own client
 * are not counted here.
 */
export class InflightGate {
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  private drained: (() => void) | undefined;

  constructor(private readonly limit: number) {}

  /** Requests holding a slot now. */
  get size(): number {
    return this.inFlight;
  }

  /** Resolves once the caller holds a slot (at once while fewer than `limit` are in flight). */
  enter(): Promise<void> | undefined {
    if (this.inFlight < this.limit) {
      this.inFlight++;
      return undefined;
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Frees the caller's slot, for the next waiter if any. */
  leave(): void {
    const next = this.waiting.shift();
    if (next) return next();
    this.inFlight--;
    if (this.inFlight === 0) this.drained?.();
  }

  /** Resolves once nothing is in flight. */
  whenIdle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => (this.drained = resolve));
  }
}
