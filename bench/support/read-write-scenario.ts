import type { LockService } from '../../lib/index.js';
import { sleep, summarize, type LatencySummary } from './stats.js';

/** Scenario (d): one key, mostly readers, some writers. */
export interface ReadWriteOptions {
  readonly workers: number;
  /** Share of operations that write (the rest read). */
  readonly writeShare: number;
  readonly holdMs: number;
  readonly thinkMs: number;
  readonly durationMs: number;
}

export interface ReadWriteResult {
  readonly variant: string;
  readonly readsPerSec: number;
  readonly writesPerSec: number;
  readonly readWaitMs: LatencySummary;
  readonly writeWaitMs: LatencySummary;
  /** Writers that held the lock together with anyone else (must be 0). */
  readonly violations: number;
  /** Most readers seen holding at once (> 1 shows sharing). */
  readonly maxConcurrentReaders: number;
}

/**
 * `workers` loops on one key, each operation a write with probability `writeShare`, else a read;
 * hold, release, think. Run with the read/write lock, or with the plain lock taking every operation
 * exclusively (what users without a read/write lock do), to show what sharing reads buys.
 */
export async function runReadWrite(
  locks: LockService,
  key: string,
  variant: 'read/write lock' | 'exclusive lock',
  options: ReadWriteOptions,
): Promise<ReadWriteResult> {
  const readWaits: number[] = [];
  const writeWaits: number[] = [];
  let readers = 0;
  let writers = 0;
  let maxConcurrentReaders = 0;
  let violations = 0;
  let reads = 0;
  let writes = 0;
  const rw = locks.readWrite(key);
  const started = performance.now();
  const deadline = started + options.durationMs;

  const worker = async (index: number) => {
    // A fixed, per-worker pattern so both variants see the same mix.
    let n = index;
    while (performance.now() < deadline) {
      n++;
      const write = (n * 7919) % 100 < options.writeShare * 100;
      const asked = performance.now();
      const handle =
        variant === 'exclusive lock'
          ? await locks.acquire(key, { leaseTime: 10_000, waitTimeout: 10_000 })
          : write
            ? await rw.write({ leaseTime: 10_000, waitTimeout: 10_000 })
            : await rw.read({ leaseTime: 10_000, waitTimeout: 10_000 });
      (write ? writeWaits : readWaits).push(performance.now() - asked);
      if (write) {
        writers++;
        if (writers > 1 || readers > 0) violations++;
      } else {
        readers++;
        if (writers > 0 && variant === 'read/write lock') violations++;
        maxConcurrentReaders = Math.max(maxConcurrentReaders, readers);
      }
      await sleep(options.holdMs);
      if (write) writers--;
      else readers--;
      await handle.release();
      if (performance.now() < deadline) {
        if (write) writes++;
        else reads++;
      }
      await sleep(options.thinkMs);
    }
  };
  await Promise.all(Array.from({ length: options.workers }, (_, i) => worker(i)));
  const elapsed = (performance.now() - started) / 1000;
  return {
    variant,
    readsPerSec: reads / elapsed,
    writesPerSec: writes / elapsed,
    readWaitMs: summarize(readWaits),
    writeWaitMs: summarize(writeWaits),
    violations,
    maxConcurrentReaders,
  };
}
