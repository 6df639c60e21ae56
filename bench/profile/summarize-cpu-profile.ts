/**
 * Reads a V8 `.cpuprofile` (from `node --cpu-prof`) and prints where the time went: self time per
 * function (name, file, line) and per file/package, as a share of the profile, top first.
 *
 *   node bench/profile/summarize-cpu-profile.ts <file.cpuprofile> [top=30] [filter] [cycles]
 *
 * `filter`: only functions whose file contains it (e.g. `lib/` for the library's own code; `-` for
 * all). `cycles`: the lock cycles the profiled run made (lock-cycle.profile.ts prints it), to add a
 * µs-per-cycle column.
 * Plain TypeScript that Node 24 runs without a loader (type annotations only).
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const [file, topArg, filterArg, cyclesArg] = process.argv.slice(2);
const filter = filterArg === '-' ? undefined : filterArg;
const cycles = cyclesArg === undefined ? undefined : Number(cyclesArg);
if (!file) throw new Error('usage: summarize-cpu-profile.ts <file.cpuprofile> [top] [filter]');
const top = Number(topArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfMicros = new Map<number, number>();
profile.samples.forEach((id, i) => selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...selfMicros.values()].reduce((a, b) => a + b, 0);

const shortUrl = (url: string) =>
  url
    .replace(/^file:\/\//, '')
    .replace(/.*\/node_modules\//, 'npm:')
    .replace(/.*\/work\/main\//, '');
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
for (const [id, micros] of selfMicros) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  const where = shortUrl(url) || '(native)';
  if (filter && !where.includes(filter)) continue;
  const fn = `${functionName || '(anonymous)'}  ${where}:${lineNumber + 1}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + micros);
  const pkg = where.startsWith('npm:')
    ? where
        .split('/')
        .slice(0, where.startsWith('npm:@') ? 2 : 1)
        .join('/')
    : where;
  byFile.set(pkg, (byFile.get(pkg) ?? 0) + micros);
}
const print = (title: string, rows: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [name, micros] of [...rows].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    const perCycle = cycles ? `${(micros / cycles).toFixed(2).padStart(7)} µs/cycle  ` : '';
    process.stdout.write(
      `${((micros / total) * 100).toFixed(2).padStart(6)} %  ${(micros / 1000).toFixed(0).padStart(6)} ms  ${perCycle}${name}\n`,
    );
  }
};
process.stdout.write(`${file}: ${(total / 1000).toFixed(0)} ms sampled\n`);
print('self time by function', byFunction);
print('self time by file / package', byFile);
