/** The most claims any window of `duration` ms holds, from the claim times (Redis server clock) handlers saw. */
export function busiestWindow(claims: readonly number[], duration: number): number {
  const sorted = [...claims].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i] - sorted[j] >= duration) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}
