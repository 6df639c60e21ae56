import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { testRedisUrl, uniquePrefix } from '../support/test-app';
import { createDelayApp, waitFor } from './support/delay-test-app';

const FIXTURE = join(__dirname, '..', 'fixtures', 'delay-crash-consumer.ts');

/** Starts the fixture consumer in a child process and collects what it reports. */
function startChildConsumer(env: Record<string, string>): { child: ChildProcess; started: string[]; ready: Promise<void> } {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', FIXTURE], {
    cwd: join(__dirname, '..', '..'),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const started: string[] = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'ready') resolve();
      if (line.startsWith('started ')) started.push(line);
    });
    child.once('exit', (code, signal) => reject(new Error(`child consumer exited (${code ?? signal}) before ready:\n${stderr}`)));
  });
  return { child, started, ready };
}

describe('Crash recovery', () => {
  it('runs the jobs of a consumer killed mid-job (SIGKILL) again on a live consumer, losing none', async () => {
    const keyPrefix = uniquePrefix('dq');
    const { child, started, ready } = startChildConsumer({
      REDIS_URL: testRedisUrl(),
      KEY_PREFIX: keyPrefix,
      TOPIC: 'crash',
      VISIBILITY: '1000',
    });
    const survivor = await createDelayApp({ keyPrefix });
    try {
      await ready;
      const ids = await survivor.queue.scheduleMany('crash', Array.from({ length: 5 }, (_, i) => ({ payload: i, id: `job-${i}` })));
      await waitFor(() => started.length === 5, 20_000, 'the child to start all five jobs');
      expect(started.every((line) => line.endsWith(' 1'))).toBe(true);

      // A live consumer is already waiting while the child holds (and keeps extending) every job.
      const reruns = new Map<string, number>();
      const consumer = survivor.queue.consume('crash', (_payload, job) => {
        reruns.set(job.id, job.attempt);
      });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(reruns.size).toBe(0); // the child is alive: its extensions keep the jobs invisible

      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      const killedAt = performance.now();
      await waitFor(() => reruns.size === 5, 10_000, 'the five jobs to run again');
      // Recovered when the visibility deadline passed (1 s), not after some long polling period.
      expect(performance.now() - killedAt).toBeLessThan(6_000);
      expect([...reruns.keys()].sort()).toEqual([...ids].sort());
      expect([...reruns.values()]).toEqual([2, 2, 2, 2, 2]);
      await waitFor(async () => (await survivor.queue.stats('crash')).active === 0, 5_000, 'acknowledgements');
      expect(await survivor.queue.stats('crash')).toEqual({ scheduled: 0, due: 0, active: 0, dead: 0 });
      await consumer.close();
    } finally {
      child.kill('SIGKILL');
      await survivor.close();
    }
  });
});
