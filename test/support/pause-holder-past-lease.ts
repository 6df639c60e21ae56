import { spawnFixture } from './child-process.js';
import { testRedisUrl } from './test-app.js';
import { sleep } from './timing.js';
import { waitForLine } from './wait-for-output.js';

/** What the paused-holder fixture held before its pause, and what its first turn after it saw. */
export interface PausedHolderReport {
  /** The fencing token it printed with `HELD` (the first word after it). */
  readonly heldToken: string;
  /** The JSON it printed with `PAUSED` on its first timer turn after SIGCONT. */
  readonly seen: Record<string, unknown>;
}

/**
 * Starts test/fixtures/paused-holder.ts in `kind` on `keyPrefix`, waits until it holds, stops it
 * (SIGSTOP), runs `takeOver` while it is stopped, and resumes it (SIGCONT) one and a half leases
 * after the stop: the fixture reports the first turn that comes more than a lease after the one
 * before. A report printed before the resume fails the call. The process is killed at the end.
 */
export async function pauseHolderPastLease(
  kind: string,
  keyPrefix: string,
  leaseMs: number,
  takeOver: () => Promise<unknown>,
): Promise<PausedHolderReport> {
  const paused = spawnFixture('paused-holder.ts', [testRedisUrl(), keyPrefix, kind, String(leaseMs)]);
  try {
    const heldToken = (await waitForLine(paused, /^HELD /, 40_000)).split(' ')[1];
    let resumed = false;
    const report = waitForLine(paused, /^PAUSED /, 60_000).then((line) => {
      if (!resumed) throw new Error(`the holder reported a pause before it was paused:\n${paused.output()}`);
      return line;
    });
    report.catch(() => undefined); // awaited below
    paused.kill('SIGSTOP');
    const stoppedAt = performance.now();
    await takeOver();
    await sleep(stoppedAt + 1.5 * leaseMs - performance.now());
    resumed = true;
    paused.kill('SIGCONT');
    return { heldToken, seen: JSON.parse((await report).slice('PAUSED '.length)) as Record<string, unknown> };
  } finally {
    paused.kill('SIGCONT');
    paused.kill('SIGKILL');
  }
}
