/**
 * Client CPU per uncontended cycle of this tree's lock against another checkout's, in one process
 * (issue 17): on a machine shared with other jobs, figures of two separate runs differ by more than
 * the change being measured, while contenders measured in the same process seconds apart under the
 * same load compare well. Each round runs every contender once (order rotated), 64 callers on
 * distinct keys as in hot-path.bench.ts; printed: the median per contender, and the median of the
 * per-round ratios to this tree's `ours' scripts alone` (the protocol with nothing around it).
 *
 *   OTHER_TREE=/path/to/other/checkout node --import ./tools/typescript-loader/register.js \
 *     bench/profile/compare-trees.bench.ts [rounds=12] [roundMs=400]
 *
 * The other checkout needs bench/support/lock-contenders.ts and node_modules (a symlink will do).
 */
import 'reflect-metadata';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { provideBenchRedis } from '../support/bench-redis.js';
import { createBareScriptsContender, createOurContenders, createRawContender, type LockContender } from '../support/lock-contenders.js';
import { runParallel } from '../support/lock-scenarios.js';

const otherTree = process.env.OTHER_TREE;
if (!otherTree) throw new Error('set OTHER_TREE to the checkout to compare with');
const rounds = Number(process.argv[2] ?? 12);
const roundMs = Number(process.argv[3] ?? 400);

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function main(): Promise<void> {
  const redis = await provideBenchRedis();
  const other = (await import(pathToFileURL(join(otherTree!, 'bench/support/lock-contenders.ts')).href)) as {
    createOurContenders: typeof createOurContenders;
  };
  const [oursHere, watchdogHere] = await createOurContenders(redis.url, 'cmp-here');
  const [oursThere, watchdogThere] = await other.createOurContenders(redis.url, 'cmp-there');
  const contenders: LockContender[] = [
    { ...oursThere, name: 'ours (other tree)' },
    { ...oursHere, name: 'ours (this tree)' },
    { ...watchdogThere, name: 'ours (watchdog, other tree)' },
    { ...watchdogHere, name: 'ours (watchdog, this tree)' },
    await createBareScriptsContender(redis.url, 'cmp-bare'),
    await createRawContender(redis.url, 'cmp-raw'),
  ];
  const perRound = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  try {
    for (const c of contenders) await runParallel(c, `warm:${c.name}`, { width: 64, durationMs: 500 });
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < contenders.length; i++) {
        const c = contenders[(i + round) % contenders.length];
        const result = await runParallel(c, `run:${c.name}`, { width: 64, durationMs: roundMs });
        perRound.get(c.name)!.push(result.cpuMicros / result.pairs);
      }
      process.stderr.write(`[compare-trees] round ${round + 1}/${rounds}\n`);
    }
  } finally {
    for (const c of contenders.slice(4)) await c.close();
    await oursHere.close();
    await oursThere.close();
    await redis.stop();
  }
  const floor = perRound.get("ours' scripts alone")!;
  const raw = perRound.get('raw')!;
  process.stdout.write(`other tree: ${otherTree}; ${rounds} rounds × ${roundMs} ms, 64 callers\n`);
  process.stdout.write('| contender | client CPU µs/cycle | vs scripts alone | vs raw |\n| --- | ---: | ---: | ---: |\n');
  for (const [name, values] of perRound) {
    const vs = (base: number[]) => median(values.map((v, i) => v / base[i])).toFixed(2);
    process.stdout.write(`| ${name} | ${median(values).toFixed(1)} | ${vs(floor)}× | ${vs(raw)}× |\n`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
