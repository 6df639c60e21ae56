import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { TYPESCRIPT_NODE_ARGS } from '../support/child-process.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { within } from '../support/timing.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';

/*
 * The heap of an instance that checks a topic's schedules (test/fixtures/repeat-heap-instance.ts, its
 * own process with --expose-gc, measured after a full GC) while schedules with a time-zone cron (a
 * parsed one is about 80 kB) are created and removed by another instance, or repeat()ed per entity by
 * itself. What it keeps must follow what is stored, not everything it ever read.
 */

const TOPIC = 'heap.beat';
const CRON = { cron: '0 2 * * *', timeZone: 'Europe/Warsaw' };
const N = 800;
const MB = 1024 * 1024;
/** Growth allowed over the baseline: noise (buffers, JIT, the producer's traffic), far below the 64 MB 800 parsed crons take. */
const MARGIN = 12 * MB;

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'repeat-heap-instance.ts');

describe('repeat(): the memory of an instance that checks schedules', () => {
  let child: ChildProcessWithoutNullStreams | undefined;
  let producer: DelayTestApp | undefined;

  afterEach(async () => {
    if (child && child.exitCode === null) {
      const exit = new Promise((resolve) => child!.once('exit', resolve));
      child.kill('SIGKILL');
      await exit;
    }
    child = undefined;
    await producer?.close();
    producer = undefined;
  });

  it('holds only what is stored: schedules removed by another instance, or per-entity schedules it repeat()ed, are not kept', async () => {
    const keyPrefix = uniquePrefix('rh');
    producer = await createDelayApp({ keyPrefix });
    child = spawn(process.execPath, ['--expose-gc', ...TYPESCRIPT_NODE_ARGS, FIXTURE, testRedisUrl(), keyPrefix, TOPIC], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const next = async (what: string): Promise<string> => {
      const line = await within(lines.next(), 120_000, `${what} (fixture output: ${output})`);
      if (line.done) throw new Error(`the fixture exited: ${output}`);
      return line.value;
    };
    /** Sends a command; resolves with the instance's heap after it, in bytes. */
    const send = async (command: string): Promise<number> => {
      child!.stdin.write(`${command}\n`);
      const reply = await next(command);
      const match = /^done (\d+)$/.exec(reply);
      if (!match) throw new Error(`unexpected reply ${reply}: ${output}`);
      return Number(match[1]);
    };
    expect(await next('ready')).toBe('ready');
    const queue = producer.queue;
    const inChunks = async (ids: string[], act: (id: string) => Promise<unknown>) => {
      for (let i = 0; i < ids.length; i += 50) await Promise.all(ids.slice(i, i + 50).map(act));
    };
    const elsewhere = (round: number) => Array.from({ length: N }, (_, i) => `p${round}-${i}`);

    await send('check');
    const baseline = await send('check');
    const growth: Record<string, number> = {};

    // Schedules created and removed by another instance, twice.
    for (const round of [1, 2]) {
      await inChunks(elsewhere(round), (id) => queue.repeat(TOPIC, CRON, { id, payload: { order: id } }));
      growth[`${N} live, made elsewhere (round ${round})`] = (await send('check')) - baseline;
      await inChunks(elsewhere(round), (id) => queue.removeRepeat(TOPIC, id));
      await send('check');
      growth[`after their removal (round ${round})`] = (await send('check')) - baseline;
    }

    // Per-entity schedules repeat()ed by the instance itself, then removed by another one.
    const own = Array.from({ length: N }, (_, i) => `w${i}`);
    await send(`repeat 0 ${N}`);
    growth[`${N} live, its own`] = (await send('check')) - baseline;
    await inChunks(own, (id) => queue.removeRepeat(TOPIC, id));
    await send('check');
    growth['after their removal (its own)'] = (await send('check')) - baseline;
    expect((await queue.listRepeats(TOPIC)).map((info) => info.id)).toEqual(['own']);

    console.log(
      `Heap growth of the checking instance over ${(baseline / MB).toFixed(1)} MB:\n${Object.entries(growth)
        .map(([what, bytes]) => `  ${what}: ${(bytes / MB).toFixed(1)} MB`)
        .join('\n')}`,
    );
    const over = Object.entries(growth).filter(([, bytes]) => bytes >= MARGIN);
    expect(over.map(([what, bytes]) => `${what}: +${(bytes / MB).toFixed(1)} MB`)).toEqual([]);
  }, 300_000);
});
