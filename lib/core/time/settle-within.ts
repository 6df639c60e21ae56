/**
 * True if `promise` resolved within `ms`, false if `ms` passed first (a rejection passes through).
 * A budget already spent (`ms` <= 0, e.g. a deadline minus now) gives the promise one timer turn.
 */
export async function settleWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, ms))));
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
