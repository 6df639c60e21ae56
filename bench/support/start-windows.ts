/** How many handler starts fell in sliding windows of one length: what a rate limit bounds. */
export interface WindowCounts {
  readonly windowMs: number;
  /** The most starts in any window [t, t + windowMs). */
  readonly max: number;
  /** Starts t whose window [t, t + windowMs) holds more than `limit` starts. */
  readonly overLimit: number;
}

/** `startsUs` sorted ascending, µs. Every window worth checking begins at a start. */
export function windowCounts(startsUs: readonly number[], windowMs: number, limit: number): WindowCounts {
  const windowUs = windowMs * 1000;
  let max = 0;
  let overLimit = 0;
  let end = 0;
  for (let i = 0; i < startsUs.length; i++) {
    while (end < startsUs.length && startsUs[end] < startsUs[i] + windowUs) end++;
    const count = end - i;
    max = Math.max(max, count);
    if (count > limit) overLimit++;
  }
  return { windowMs, max, overLimit };
}
