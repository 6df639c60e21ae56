import type { Redis } from 'ioredis';

/** Percentiles of a sample, in the sample's unit. */
export interface Distribution {
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
  const mean = sorted.reduce((sum, v) => sum + v, 0) / Math.max(1, sorted.length);
  return { count: sorted.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: sorted[sorted.length - 1] ?? NaN, mean };
}

/** Calls per command since the last CONFIG RESETSTAT, from INFO commandstats. */
export async function commandCounts(admin: Redis): Promise<Map<string, number>> {
  const info = await admin.info('commandstats');
  const counts = new Map<string, number>();
  for (const line of info.split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (match) counts.set(match[1], Number(match[2]));
  }
  return counts;
}

/** A GitHub-flavoured markdown table. */
export function markdown(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves when `predicate` holds (checked every 5 ms), rejects after `timeoutMs`. */
export async function until(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!predicate()) {
    if (performance.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await sleep(5);
  }
}
