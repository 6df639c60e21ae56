import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release as osRelease } from 'node:os';
import { join } from 'node:path';
import { describeVersions, stackVersions } from './stack-versions.js';

const RESULTS_DIR = join(import.meta.dirname, '..', 'results');

/** The machine line of a report: OS, CPUs, load at both ends, Redis and package versions. */
export function environmentLine(redisVersion: string, loadAtStart: readonly number[], packages: readonly string[], quick: boolean) {
  const load = (l: readonly number[]) => l.map((x) => x.toFixed(2)).join(' ');
  const versions = stackVersions(packages);
  const text =
    `${platform()} ${osRelease()}, ${cpus().length} CPU (${cpus()[0]?.model ?? '?'}), load (1/5/15 min) ${load(loadAtStart)} at start, ` +
    `${load(loadavg())} at end, Redis ${redisVersion}, ${describeVersions(versions)}${quick ? ', QUICK run (not comparable)' : ''}`;
  return { text, versions };
}

/** Writes bench/results/<name>-latest.md and .json, and prints the markdown. */
export function writeResults(name: string, markdown: string, json: unknown): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, `${name}-latest.md`), markdown);
  writeFileSync(join(RESULTS_DIR, `${name}-latest.json`), `${JSON.stringify(json, null, 2)}\n`);
  process.stdout.write(`${markdown}\n`);
}
