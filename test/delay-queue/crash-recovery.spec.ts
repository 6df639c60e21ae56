import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { RedisLockEvents } from '../../lib/index.js';
import type { JobRecoveredEvent } from '../../lib/core/events/job-events.js';
import { TYPESCRIPT_NODE_ARGS } from '../support/child-process.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { createDelayApp } from './support/delay-test-app.js';
import { sleep, waitFor } from '../support/timing.js';
import { topicStats } from '../support/topic-stats.js';

const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'delay-crash-consumer.ts');

/**
 * Starts the fixture consumer of `topic` (visibility timeout 1 s) on the test Redis in a child process
 * and collects what it reports.
 */
function startChildConsumer(keyPrefix: string, topic: string): { child: ChildProcess; started: string[]; ready: Promise<void> } {
  const child = spawn(process.execPath, [...TYPESCRIPT_NODE_ARGS, FIXTURE], {
    cwd: join(import.meta.dirname, '..', '..'),
    env: { ...process.env, REDIS_URL: testRedisUrl(), KEY_PREFIX: keyPrefix, TOPIC: topic, VISIBILITY: '2000' },
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
    const { child, started, ready } = startChildConsumer(keyPrefix, 'crash');
    const survivor = await createDelayApp({ keyPrefix });
    const recovered: JobRecoveredEvent[] = [];
    survivor.app.get(RedisLockEvents).on('job.recovered', (event) => recovered.push(event));
    try {
      await ready;
      const ids = await survivor.queue.scheduleMany(
        'crash',
        Array.from({ length: 5 }, (_, i) => ({ payload: i, id: `job-${i}` })),
      );
      await waitFor(() => started.length === 5, 20_000, 'the child to start all five jobs');
      expect(started.every((line) => line.endsWith(' 1'))).toBe(true);

      // A live consumer is already waiting while the child holds (and keeps extending) every job.
      const reruns = new Map<string, number>();
      const consumer = survivor.queue.consume('crash', (_payload, job) => {
        reruns.set(job.id, job.attempt);
      });
      // Past the child's 2 s visibility timeout (1 s lost its extension to a stall of a loaded machine).
      await sleep(2_500);
      expect(reruns.size).toBe(0); // the child is alive: its extensions keep the jobs invisible

      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      const killedAt = performance.now();
      await waitFor(() => reruns.size === 5, 10_000, 'the five jobs to run again');
      // Recovered when the visibility deadline passed (2 s), not after some long polling period.
      expect(performance.now() - killedAt).toBeLessThan(6_000);
      expect([...reruns.keys()].sort()).toEqual([...ids].sort());
      expect([...reruns.values()]).toEqual([2, 2, 2, 2, 2]);
      // The survivor that took the jobs back says so, once per job.
      expect(recovered.map((e) => e.id).sort()).toEqual([...ids].sort());
      expect(recovered.every((e) => e.topic === 'crash' && e.attempt === 1 && e.requeued && e.maxAttempts === 5)).toBe(true);
      await waitFor(async () => (await survivor.queue.stats('crash')).active === 0, 5_000, 'acknowledgements');
      expect(await survivor.queue.stats('crash')).toEqual(topicStats());
      await consumer.close();
    } finally {
      child.kill('SIGKILL');
      await survivor.close();
    }
  });

  it('buries a job whose last attempt died with its consumer, reporting job.recovered then job.dead', async () => {
    const keyPrefix = uniquePrefix('dq');
    const { child, started, ready } = startChildConsumer(keyPrefix, 'last-try');
    const survivor = await createDelayApp({ keyPrefix });
    const seen: Array<{ name: string; event: object }> = [];
    const events = survivor.app.get(RedisLockEvents);
    events.on('job.recovered', (event) => seen.push({ name: 'job.recovered', event }));
    events.on('job.dead', (event) => seen.push({ name: 'job.dead', event }));
    try {
      await ready;
      await survivor.queue.schedule('last-try', { n: 1 }, { id: 'only-try', maxAttempts: 1 });
      await waitFor(() => started.length === 1, 20_000, 'the child to start the job');
      const consumer = survivor.queue.consume('last-try', () => undefined);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
      await waitFor(() => seen.length === 2, 10_000, 'job.recovered and job.dead');
      expect(seen).toEqual([
        { name: 'job.recovered', event: { topic: 'last-try', id: 'only-try', attempt: 1, maxAttempts: 1, requeued: false } },
        {
          name: 'job.dead',
          event: {
            topic: 'last-try',
            id: 'only-try',
            attempt: 1,
            maxAttempts: 1,
            error: expect.stringContaining('Visibility timeout passed without an acknowledgement'),
            unrecoverable: false,
          },
        },
      ]);
      const [dead] = await survivor.queue.deadLetters('last-try');
      expect(dead).toMatchObject({ id: 'only-try', state: 'dead', attempts: 1 });
      expect(dead.lastError).toBe(seen[1].event && (seen[1].event as { error: string }).error);
      await consumer.close();
    } finally {
      child.kill('SIGKILL');
      await survivor.close();
    }
  });
});
