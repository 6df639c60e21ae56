/**
 * The relay loop's pause between looks: `sleep(ms)` waits `ms`, or less when `wake()` is called
 * (a wake while no pause is running makes the next pause end at once, so none is lost), or when
 * `wakeAfter` fires. Once closed, every pause ends at once and no timer is set.
 */
export class RelayWakeup {
  private wakeNow?: () => void;
  private wakeRequested = false;
  private timer?: NodeJS.Timeout;
  private closed = false;

  /** Waits `ms`, or less when woken. */
  sleep(ms: number): Promise<void> {
    if (this.wakeRequested || this.closed) {
      this.wakeRequested = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wakeNow?.(), ms);
      this.wakeNow = () => {
        clearTimeout(timer);
        this.wakeNow = undefined;
        resolve();
      };
    });
  }

  /** Ends the current pause, or the next one at once. */
  wake(): void {
    if (this.wakeNow) this.wakeNow();
    else this.wakeRequested = true;
  }

  /** Wakes the loop in `ms`, unless a wake is already set for later (that one stands). */
  wakeAfter(ms: number): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.wake();
    }, ms);
    this.timer.unref();
  }

  /** Ends the current pause and every later one at once; cancels a pending `wakeAfter`. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.wake();
  }
}
