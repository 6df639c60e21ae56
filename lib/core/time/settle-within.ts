import { MAX_TIMER_MS, timerDelay } from './timer-delay.js';

/**
 * True if `promise` resolved within `ms`, false if `ms` passed first (a rejection passes through).
 * A budget already spent (`ms` <= 0, e.g. a deadline minus now) gives the promise one timer turn.
 * A budget past setTimeout's bound (a lease of weeks; Infinity) is waited in timers of at most that
 * bound, each re-armed for what is left, so it never ends early.
 */
export async function settleWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const until = performance.now() + ms;
  const timeout = new Promise<false>((resolve) => {
    const arm = (left: number) => {
      timer = setTimeout(() => {
        const rest = until - performance.now();
        if (left > MAX_TIMER_MS && rest > 0) arm(rest);
        else resolve(false);
      }, timerDelay(left));
    };
    arm(ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
