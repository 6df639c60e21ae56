/**
 * setTimeout's upper bound (2^31 - 1 ms, about 24.8 days): Node fires a longer delay after 1 ms
 * (with a TimeoutOverflowWarning), so no timer of the library asks for more.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * `ms` as a delay a Node timer honours: at least 0, at most `MAX_TIMER_MS`. A timer armed with it may
 * fire before `ms` has passed (when `ms` was past the bound): its callback must check the time and
 * re-arm, as `DeadlineList` and `settleWithin` do.
 */
export function timerDelay(ms: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(0, ms));
}
