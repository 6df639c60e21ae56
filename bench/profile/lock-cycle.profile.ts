/**
 * A small driver to profile the lock's uncontended cycle on the client (issue 17): 64 callers in
 * parallel, each looping acquire + release on a key of its own, for a fixed time, nothing else in
 * the process (`PROFILE_WIDTH` changes the 64). With `PROFILE_OUT=<file.cpuprofile>` it records a V8 CPU profile of the measured run
 * only (after the warm-up, through `node:inspector`, so module loading and compiling stay out of it);
 * summarise it with summarize-cpu-profile.ts:
 *
 *   PROFILE_OUT=/tmp/fixed.cpuprofile node --import ./tools/typescript-loader/register.js \
 *     bench/profile/lock-cycle.profile.ts [fixed|watchdog|bare] [seconds]
 *   node bench/profile/summarize-cpu-profile.ts /tmp/fixed.cpuprofile
 *
 * With `PERF_CTL=<fifo>` it writes `enable` / `disable` to that fifo around the measured run, for
 * `perf stat -D -1 --control fifo:<fifo> -e instructions:u node …`: user-space instructions per
 * cycle, a figure that hardly moves with the machine's load (CPU time per cycle does).
 *
 * `fixed`: a fixed lease (the bench's `ours`); `watchdog`: the default lease kept by the watchdog;
 * `bare`: the two scripts alone on one client (`ours' scripts alone`). `PROFILE_TRACING=0` builds
 * the module with `tracing: false`. Prints the client CPU per cycle of the measured run (the
 * profiler's own cost included when profiling: compare runs made the same way).
 */
import 'reflect-metadata';
import { openSync, writeFileSync, writeSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createBareScriptsContender, createOurContenders, type LockContender } from '../support/lock-contenders.js';
import { provideBenchRedis } from '../support/bench-redis.js';
import { runParallel } from '../support/lock-scenarios.js';

const variant = process.argv[2] ?? 'fixed';
const seconds = Number(process.argv[3] ?? 8);
const tracing = process.env.PROFILE_TRACING !== '0';
const profileOut = process.env.PROFILE_OUT;
/**
 * Callers in parallel (64, as in the bench). `PROFILE_WIDTH=1` runs one caller: every command then
 * has a wake-up of its own, so instructions per cycle no longer depend on how many replies a loaded
 * machine lets pile up per read, and two trees compare within about 1 %.
 */
const width = Number(process.env.PROFILE_WIDTH ?? 64);
const perfControl = process.env.PERF_CTL ? openSync(process.env.PERF_CTL, 'w') : undefined;

async function main(): Promise<void> {
  const redis = await provideBenchRedis();
  const ours = await createOurContenders(redis.url, 'prof', { tracing });
  let contender: LockContender;
  if (variant === 'bare') contender = await createBareScriptsContender(redis.url, 'prof-bare');
  else if (variant === 'watchdog') contender = ours[1];
  else if (variant === 'fixed') contender = ours[0];
  else throw new Error(`variant must be fixed, watchdog or bare, not ${variant}`);
  const session = profileOut ? new Session() : undefined;
  try {
    await runParallel(contender, 'warm', { width, durationMs: 1_500 });
    if (session) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.setSamplingInterval', { interval: 250 });
      await session.post('Profiler.start');
    }
    if (perfControl !== undefined) writeSync(perfControl, 'enable\n');
    const result = await runParallel(contender, 'run', { width, durationMs: seconds * 1_000 });
    if (perfControl !== undefined) writeSync(perfControl, 'disable\n');
    if (session) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(profileOut!, JSON.stringify(profile));
      session.disconnect();
    }
    process.stdout.write(
      `${variant}${tracing ? '' : ' (tracing off)'}: ${result.pairs} cycles, ` +
        (`${(result.cpuMicros / result.pairs).toFixed(1)} µs client CPU per ` +
          `cycle, ${Math.round((result.pairs / result.elapsedMs) * 1000)} cycles/s\n`),
    );
  } finally {
    if (variant === 'bare') await contender.close();
    await ours[0].close();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
