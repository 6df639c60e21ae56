/**
 * Redis's clock as seen from this process: an offset to `performance.now()`, measured on every
 * claim from the script's TIME. Due times and visibility deadlines are Redis times, so local timers
 * aimed at them go through this.
 */
export class ServerClock {
  private offset = 0;

  /**
   * `serverNowUs` was read by a script sent at `sentAt` and answered at `receivedAt` (both
   * `performance.now()`); taking the midpoint bounds the error by half a round trip.
   */
  sync(serverNowUs: number, sentAt: number, receivedAt: number): void {
    this.offset = serverNowUs / 1000 - (sentAt + receivedAt) / 2;
  }

  /** Redis's current time in ms, as last measured. */
  now(): number {
    return performance.now() + this.offset;
  }
}
