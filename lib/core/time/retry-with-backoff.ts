/** How `retryWithBackoff` reports failures, waits between tries and decides to stop. */
interface RetryWithBackoffOptions {
  /** Called with every failure of `attempt` and the number of failures so far (counting the first). */
  readonly failed: (error: unknown, failures: number) => void;
  /** How long to wait before the next try, after `failures` failures. Asked only when another try follows. */
  readonly delay: (failures: number) => number;
  /** Asked after each failure: true ends the retries without waiting (default: never). */
  readonly giveUp?: (failures: number) => boolean;
  /** Asked before every try and before every wait: true ends the retries (default: never). */
  readonly stopped?: () => boolean;
  /** Waits `ms` (may end early, e.g. when woken at shutdown). Default: an unref'd timer. */
  readonly wait?: (ms: number) => Promise<void>;
  /**
   * Tries already failed elsewhere (default 0). With one or more, the retries start with a wait of
   * `delay(failuresSoFar)` instead of an immediate try.
   */
  readonly failuresSoFar?: number;
}

type RetryOutcome<T> = { readonly succeeded: true; readonly value: T } | { readonly succeeded: false };

/**
 * Runs `attempt` until it resolves, waiting `delay(failures)` between tries, until `giveUp` or
 * `stopped` says to stop. Order per round: `stopped?` → try → on failure `failed`, then `giveUp?` →
 * `stopped?` → wait. Never rejects: every rejection of `attempt` goes to `failed`.
 */
export async function retryWithBackoff<T>(attempt: () => Promise<T>, options: RetryWithBackoffOptions): Promise<RetryOutcome<T>> {
  const { failed, delay, giveUp, stopped, wait = unrefSleep } = options;
  let failures = options.failuresSoFar ?? 0;
  for (;;) {
    if (failures > 0) {
      if (stopped?.()) return { succeeded: false };
      await wait(delay(failures));
    }
    if (stopped?.()) return { succeeded: false };
    try {
      return { succeeded: true, value: await attempt() };
    } catch (error) {
      failures++;
      failed(error, failures);
      if (giveUp?.(failures)) return { succeeded: false };
    }
  }
}

function unrefSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
