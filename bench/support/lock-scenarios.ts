import type { LockContender } from './lock-contenders.js';
import { sleep, summarize, type LatencySummary } from './stats.js';

/**
 * CPU time of this process since `start`. Unlike wall-clock throughput it hardly moves when other
 * jobs share the machine, so it shows a contender's client-side cost even on a busy box.
 */
function cpuSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

/** (a) One caller, one key: acquire + release, back to back. */
export interface SequentialResult {
  readonly pairs: number;
  readonly elapsedMs: number;
  /** Latency of one acquire + release pair, ms. */
  readonly latencies: number[];
  /** CPU time this process spent meanwhile (user + system), µs. */
  readonly cpuMicros: number;
}

export async function runSequential(
  contender: LockContender,
  key: string,
  { warmup, iterations }: { warmup: number; iterations: number },
): Promise<SequentialResult> {
  for (let i = 0; i < warmup; i++) await (await contender.acquire(key))();
  const latencies = new Array<number>(iterations);
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    const release = await contender.acquire(key);
    await release();
    latencies[i] = performance.now() - t0;
  }
  const elapsedMs = performance.now() - started;
  return { pairs: iterations, elapsedMs, latencies, cpuMicros: cpuSince(cpu) };
}

/** (b) `width` callers at once, each looping acquire + release on a key of its own. */
export interface ParallelResult {
  readonly pairs: number;
  readonly elapsedMs: number;
  /** CPU time this process spent meanwhile (user + system), µs. */
  readonly cpuMicros: number;
}

export async function runParallel(
  contender: LockContender,
  keyBase: string,
  { width, durationMs }: { width: number; durationMs: number },
): Promise<ParallelResult> {
  let pairs = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const end = started + durationMs;
  await Promise.all(
    Array.from({ length: width }, async (_, i) => {
      const key = `${keyBase}:${i}`;
      while (performance.now() < end) {
        await (
          await contender.acquire(key)
        )();
        pairs++;
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  return { pairs, elapsedMs, cpuMicros: cpuSince(cpu) };
}

export interface HotKeyOptions {
  readonly workers: number;
  readonly durationMs: number;
  readonly holdMs: number;
  readonly thinkMs: number;
}

/** (c) Many workers on one key: acquire (waiting), hold, release, think; for a fixed time. */
export interface HotKeyResult {
  /** Acquisitions completed inside the measuring window. */
  readonly acquisitionsInWindow: number;
  readonly windowMs: number;
  /** All acquisitions, including those that completed while the workers wound down. */
  readonly acquisitions: number;
  /** From one release resolving to the next acquire resolving (gap between consecutive holders), ms. */
  readonly handoff: LatencySummary;
  readonly handoffSamples: number[];
  /** Handoffs measured at or below 0 (next acquire resolved in the same tick as the release), counted as 0. */
  readonly sameTickHandoffs: number;
  /** From calling acquire to it resolving, ms. */
  readonly wait: LatencySummary;
  readonly waitSamples: number[];
  /**
   * Share of the window during which some worker held the lock, counted from acquire() resolving
   * to release() resolving: how close a contender gets to the ceiling that hold + release sets.
   */
  readonly heldMs: number;
  /** Acquisitions per worker. */
  readonly perWorker: number[];
  /** Times a worker's acquire resolved while another worker still held the lock (must be 0). */
  readonly overlaps: number;
  /** Acquires that gave up (wait bound reached) or failed. */
  readonly failedAcquires: number;
  readonly failedReleases: number;
  readonly firstError?: string;
}

interface Hold {
  readonly acquiredAt: number;
  releasedAt: number;
}

/**
 * Mutual exclusion is checked on the client: a hold is counted from its acquire resolving to its
 * release being called, which lies inside the time Redis really gives it the lock. Two counted
 * holds that overlap are therefore a real violation, never an artefact of the measurement.
 */
export async function runHotKey(contender: LockContender, key: string, options: HotKeyOptions): Promise<HotKeyResult> {
  const holds: Hold[] = [];
  const waits: number[] = [];
  const perWorker = new Array<number>(options.workers).fill(0);
  let holders = 0;
  let overlaps = 0;
  let failedAcquires = 0;
  let failedReleases = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const end = started + options.durationMs;

  const worker = async (index: number): Promise<void> => {
    while (performance.now() < end) {
      const asked = performance.now();
      let release;
      try {
        release = await contender.acquire(key);
      } catch (error) {
        failedAcquires++;
        firstError ??= String((error as Error)?.message ?? error);
        continue;
      }
      const acquiredAt = performance.now();
      if (++holders > 1) overlaps++;
      waits.push(acquiredAt - asked);
      perWorker[index]++;
      const hold: Hold = { acquiredAt, releasedAt: Number.NaN };
      holds.push(hold);
      await sleep(options.holdMs);
      holders--;
      try {
        await release();
      } catch (error) {
        failedReleases++;
        firstError ??= String((error as Error)?.message ?? error);
      }
      hold.releasedAt = performance.now();
      await sleep(options.thinkMs);
    }
  };
  await Promise.all(Array.from({ length: options.workers }, (_, i) => worker(i)));

  holds.sort((x, y) => x.acquiredAt - y.acquiredAt);
  const handoffs: number[] = [];
  let sameTickHandoffs = 0;
  for (let i = 1; i < holds.length; i++) {
    // Replies to a release and to the next holder's acquire can arrive in one read and resolve in
    // either order: such a gap (<= 0) is a hand-off already in flight, counted as 0.
    const gap = holds[i].acquiredAt - holds[i - 1].releasedAt;
    if (gap <= 0) sameTickHandoffs++;
    handoffs.push(Math.max(0, gap));
  }
  let heldMs = 0;
  for (const h of holds) if (h.acquiredAt < end) heldMs += Math.min(h.releasedAt, end) - h.acquiredAt;
  return {
    acquisitionsInWindow: holds.filter((h) => h.acquiredAt <= end).length,
    windowMs: options.durationMs,
    heldMs,
    acquisitions: holds.length,
    handoff: summarize(handoffs),
    handoffSamples: handoffs,
    sameTickHandoffs,
    wait: summarize(waits),
    waitSamples: waits,
    perWorker,
    overlaps,
    failedAcquires,
    failedReleases,
    firstError,
  };
}

/** Pools several runs of one contender: counts add up, percentiles are taken over all samples. */
export function mergeHotKeyRuns(runs: readonly HotKeyResult[]): HotKeyResult {
  const handoffSamples = runs.flatMap((r) => r.handoffSamples);
  const waitSamples = runs.flatMap((r) => r.waitSamples);
  const sum = (f: (r: HotKeyResult) => number) => runs.reduce((n, r) => n + f(r), 0);
  return {
    acquisitionsInWindow: sum((r) => r.acquisitionsInWindow),
    windowMs: sum((r) => r.windowMs),
    heldMs: sum((r) => r.heldMs),
    acquisitions: sum((r) => r.acquisitions),
    handoff: summarize(handoffSamples),
    handoffSamples,
    sameTickHandoffs: sum((r) => r.sameTickHandoffs),
    wait: summarize(waitSamples),
    waitSamples,
    perWorker: runs[0].perWorker.map((_, i) => sum((r) => r.perWorker[i])),
    overlaps: sum((r) => r.overlaps),
    failedAcquires: sum((r) => r.failedAcquires),
    failedReleases: sum((r) => r.failedReleases),
    firstError: runs.find((r) => r.firstError)?.firstError,
  };
}
