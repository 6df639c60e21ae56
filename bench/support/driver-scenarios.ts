import type { DelayQueueService } from '../../lib/index.js';
import type { LockContender } from './lock-contenders.js';
import { summarize, type LatencySummary } from './stats.js';
import type { Usage, UsageMeter } from './usage-meter.js';

/** What one measured stretch did: operations, wall clock, CPU on both sides (`UsageMeter`). */
export interface Measured {
  readonly ops: number;
  readonly elapsedMs: number;
  readonly usage: Usage;
}

/** (1) One caller: acquire + release of a fresh key each time, back to back; latency of each pair, ms. */
export async function runFreshKeyCycles(
  contender: LockContender,
  keyBase: string,
  cycles: number,
  meter: UsageMeter,
): Promise<Measured & { readonly latency: LatencySummary }> {
  const latencies = new Array<number>(cycles);
  const { result: elapsedMs, usage } = await meter.measure(async () => {
    const started = performance.now();
    for (let i = 0; i < cycles; i++) {
      const t0 = performance.now();
      const release = await contender.acquire(`${keyBase}:${i}`);
      await release();
      latencies[i] = performance.now() - t0;
    }
    return performance.now() - started;
  });
  return { ops: cycles, elapsedMs, usage, latency: summarize(latencies) };
}

/** (2) `callers` at once on one key, `total` acquisitions in all: wait (acquire called → resolved), ms. */
export interface HotKeyCount extends Measured {
  readonly wait: LatencySummary;
  /** Acquires that resolved while another caller still held the key (must be 0). */
  readonly overlaps: number;
  /** Acquisitions per caller, fewest and most: how evenly the key went round. */
  readonly perCaller: { readonly min: number; readonly max: number };
  readonly failures: number;
  readonly firstError?: string;
}

/**
 * Each caller loops acquire → a section of one microtask → release until `total` acquisitions were
 * handed out. Mutual exclusion is checked on the client (a hold counts from acquire resolving to
 * release being called, inside the time Redis gives the lock), so an overlap is a real violation.
 */
export async function runHotKeyCount(
  contender: LockContender,
  key: string,
  { callers, total }: { callers: number; total: number },
  meter: UsageMeter,
): Promise<HotKeyCount> {
  const waits: number[] = [];
  let started = 0;
  let holders = 0;
  let overlaps = 0;
  let failures = 0;
  let firstError: string | undefined;
  const acquired = new Array<number>(callers).fill(0);
  const caller = async (index: number): Promise<void> => {
    while (started < total) {
      started++;
      const asked = performance.now();
      let release;
      try {
        release = await contender.acquire(key);
      } catch (error) {
        failures++;
        firstError ??= String((error as Error)?.message ?? error);
        continue;
      }
      waits.push(performance.now() - asked);
      acquired[index]++;
      if (++holders > 1) overlaps++;
      await Promise.resolve();
      holders--;
      try {
        await release();
      } catch (error) {
        failures++;
        firstError ??= String((error as Error)?.message ?? error);
      }
    }
  };
  const { result: elapsedMs, usage } = await meter.measure(async () => {
    const t0 = performance.now();
    await Promise.all(Array.from({ length: callers }, (_, i) => caller(i)));
    return performance.now() - t0;
  });
  const perCaller = { min: Math.min(...acquired), max: Math.max(...acquired) };
  return { ops: waits.length, elapsedMs, usage, wait: summarize(waits), overlaps, perCaller, failures, firstError };
}

/** (3) The delayed-job burst: enqueue and first handler times (ms from the start), and the whole stretch. */
export interface JobBurst extends Measured {
  readonly enqueueMs: number;
  readonly firstMs: number;
}

/**
 * Schedules `jobs` jobs due now on a fresh `topic` (`scheduleMany`, 1,000 per call), then consumes
 * them with `concurrency` handlers until every handler ran: end to end, from the first schedule
 * call to the last handler. The consumer is closed (its last acknowledgements written) outside the
 * measured stretch; `timeoutMs` bounds a run that stalls.
 */
export async function runJobBurst(
  queue: DelayQueueService,
  topic: string,
  { jobs, concurrency, timeoutMs }: { jobs: number; concurrency: number; timeoutMs: number },
  meter: UsageMeter,
): Promise<JobBurst> {
  let ran = 0;
  let firstAt = 0;
  let allRan!: () => void;
  const finished = new Promise<void>((resolve) => (allRan = resolve));
  let consumer: ReturnType<DelayQueueService['consume']> | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    const { result, usage } = await meter.measure(async () => {
      const t0 = performance.now();
      for (let i = 0; i < jobs; i += 1000) {
        const count = Math.min(1000, jobs - i);
        await queue.scheduleMany(
          topic,
          Array.from({ length: count }, (_, j) => ({ payload: i + j })),
        );
      }
      const enqueued = performance.now();
      consumer = queue.consume(
        topic,
        () => {
          if (ran === 0) firstAt = performance.now();
          if (++ran === jobs) allRan();
        },
        { concurrency },
      );
      const stalled = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${topic}: ${ran} of ${jobs} jobs ran within ${timeoutMs} ms`)), timeoutMs);
      });
      await Promise.race([finished, stalled]);
      const end = performance.now();
      return { enqueueMs: enqueued - t0, firstMs: firstAt - t0, elapsedMs: end - t0 };
    });
    return { ops: jobs, usage, ...result };
  } finally {
    clearTimeout(timer);
    await consumer?.close();
  }
}
