/**
 * One process of the "many waiters on one key" scale check (bench/scale.bench.ts): `workers`
 * callers loop acquire → hold → release on one key with one contender, from a wall-clock start
 * time shared by every process, for `durationMs`. It prints `ready` once connected, then reads the
 * start time (epoch ms) from stdin: the parent sends it when every process is ready. Prints one JSON line: every hold's acquire and
 * release-called and release-resolved times (epoch ms with sub-ms precision: performance.timeOrigin + performance.now(), the
 * same clock in every process of the machine) and the worker that held.
 *
 *   node --import ./tools/typescript-loader/register.js bench/support/waiter-process.ts \
 *     <contender> <redis url> <key> <workers> <durationMs> <holdMs> <processIndex>
 */
import 'reflect-metadata';
import {
  createOurContenders,
  createRawContender,
  createRedlockContender,
  createSemaphoreContender,
  type LockContender,
} from './lock-contenders.js';
import { sleep } from './stats.js';

const [contenderName, url, key, workersText, durationText, holdText, processText] = process.argv.slice(2);
const workers = Number(workersText);
const durationMs = Number(durationText);
const holdMs = Number(holdText);
const processIndex = Number(processText);
const now = () => performance.timeOrigin + performance.now();

async function contender(): Promise<{ contender: LockContender; all: LockContender[] }> {
  if (contenderName.startsWith('ours')) {
    const all = await createOurContenders(url, 'scale');
    return { contender: all.find((c) => c.name === contenderName)!, all };
  }
  const made =
    contenderName === 'raw'
      ? await createRawContender(url, 'scale:raw')
      : contenderName === 'redlock'
        ? await createRedlockContender(url, 'scale:redlock')
        : await createSemaphoreContender(url, 'scale:sem');
  return { contender: made, all: [made] };
}

async function main(): Promise<void> {
  const { contender: c, all } = await contender();
  // Connect (and load scripts) before the common start.
  await (
    await c.acquire(`${key}:warm:${processIndex}`)
  )();
  process.stdout.write('ready\n');
  const startAt = await new Promise<number>((resolve) => {
    let input = '';
    process.stdin.setEncoding('utf8').on('data', (chunk: string) => {
      input += chunk;
      if (input.includes('\n')) resolve(Number(input.trim()));
    });
  });
  process.stdin.pause();
  await sleep(Math.max(0, startAt - now()));
  const end = startAt + durationMs;
  const holds: [worker: number, acquiredAt: number, releaseCalledAt: number, releasedAt: number][] = [];
  let failures = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, i) => {
      const worker = processIndex * workers + i;
      while (now() < end) {
        let release;
        try {
          release = await c.acquire(key);
        } catch {
          failures++;
          continue;
        }
        const acquiredAt = now();
        await sleep(holdMs);
        const releaseCalledAt = now();
        await release();
        holds.push([worker, acquiredAt, releaseCalledAt, now()]);
      }
    }),
  );
  for (const each of all) await each.close().catch(() => undefined);
  process.stdout.write(`${JSON.stringify({ holds, failures })}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
