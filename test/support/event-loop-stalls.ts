/** How often the watch ticks, in ms. */
const TICK_MS = 10;
/**
 * A tick this much later than due marks a stall. Timers run a few ms late on any host: counted,
 * that jitter would add up to a share of every span (3 % idle, a third under load) and could hide
 * a real delay of the library; a stall worth subtracting (GC, the process descheduled) is longer.
 */
const STALL_MIN_MS = 50;

/** What `watchEventLoopStalls` gives a spec. */
export interface EventLoopStalls {
  /**
   * How long, in ms, this process could run nothing within [from, to] (`Date.now()` times): the
   * part of those moments that fell inside a stall (a long GC pause, the process descheduled on a
   * loaded host, a synchronous task). A bound on the library's own delay subtracts it.
   */
  within(from: number, to: number): number;
  /** The ms since `from` (a `Date.now()` time) less the stalls within them: the time this process could run. */
  runnableSince(from: number): number;
  stop(): void;
}

/**
 * Watches this process's event loop with a short interval timer and records each stretch in which
 * the timer could not run. A timer aimed at one moment sees only a stall that covers that moment;
 * this sees a stall that falls anywhere in a span (after a job fell due, while its claim was in flight).
 */
export function watchEventLoopStalls(): EventLoopStalls {
  const stalls: Array<{ from: number; to: number }> = [];
  let last = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    if (now - last - TICK_MS >= STALL_MIN_MS) stalls.push({ from: last + TICK_MS, to: now });
    last = now;
  }, TICK_MS);
  // Never what keeps a worker alive (a spec that failed before its stop()).
  timer.unref();
  return {
    within(from, to) {
      // The stretch since the last tick counts as a stall too if it is one already.
      const open = Date.now() - last - TICK_MS >= STALL_MIN_MS ? [{ from: last + TICK_MS, to: Date.now() }] : [];
      let total = 0;
      for (const stall of [...stalls, ...open]) total += Math.max(0, Math.min(to, stall.to) - Math.max(from, stall.from));
      return total;
    },
    runnableSince(from) {
      const now = Date.now();
      return now - from - this.within(from, now);
    },
    stop: () => clearInterval(timer),
  };
}
