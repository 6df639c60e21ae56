import type { Consumer } from '../../lib/index.js';
import { reportedBy, spawnFixture } from '../support/child-process.js';
import { testRedisUrl, uniquePrefix } from '../support/test-app.js';
import { waitFor, within } from '../support/timing.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';

type Fixture = ReturnType<typeof spawnFixture>;
const VISIBILITY_MS = 2_000;

/*
 * "A lock's held/signal are right the moment code runs again after the event loop was paused past
 * the lease" (DESIGN.md), for a claimed job: a consumer paused (SIGSTOP, GC, frozen VM) past its
 * visibility timeout, whose job another consumer took over, must see `job.signal` aborted at the
 * first read its handler makes after the pause, although the handler's own timer, due before the
 * visibility deadline, runs before the consumer's loss timer.
 */
describe('a consumer paused past its visibility timeout', () => {
  let app: DelayTestApp | undefined;
  let child: Fixture | undefined;
  let consumer: Consumer | undefined;

  afterEach(async () => {
    await consumer?.close();
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
    await app?.close();
  });

  it('reads job.signal aborted (JobVisibilityLostError) at its first turn after SIGCONT, while the takeover runs', async () => {
    const keyPrefix = uniquePrefix('pcs');
    const topic = 'paused.signal';
    app = await createDelayApp({ keyPrefix });
    child = spawnFixture('paused-job-consumer.ts', [testRedisUrl(), keyPrefix, topic, String(VISIBILITY_MS)]);
    const paused = child;
    await waitFor(() => /^ready /m.test(paused.output()) || undefined, 30_000, `the consumer process to start:\n${paused.output()}`);

    const id = await app.queue.schedule(topic, {}, { id: 'paused-job' });
    expect(await reportedBy<{ id: string; attempt: number }>(paused, 'start')).toEqual({ id, attempt: 1 });
    paused.kill('SIGSTOP');
    const stoppedAt = performance.now();

    // Another consumer takes the job over once the paused one's visibility has passed.
    const takeover: number[] = [];
    let finishTakeover!: () => void;
    const takeoverDone = new Promise<void>((resolve) => (finishTakeover = resolve));
    consumer = app.queue.consume(topic, async (_payload, job) => {
      takeover.push(job.attempt);
      await takeoverDone;
    });
    await waitFor(() => takeover.length > 0 || undefined, 20_000, 'the takeover to start the job');
    expect(takeover).toEqual([2]);

    // The stop lasts at least 1.5 visibility timeouts (the fixture reports the first turn after a gap
    // of more than half of one), however soon after 'start' the SIGSTOP came.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, stoppedAt + 1.5 * VISIBILITY_MS - performance.now())));
    paused.kill('SIGCONT');
    const seen = await reportedBy<Record<string, unknown>>(paused, 'PAUSED');
    finishTakeover();
    expect(seen).toEqual({
      gapMs: expect.any(Number),
      signalAborted: true,
      reason: 'JOB_VISIBILITY_LOST',
      contextAborted: true,
      throwsIfAborted: true,
    });
    expect(paused.output()).not.toMatch(/^unhandled /m);
    const exited = new Promise<void>((resolve) => paused.once('exit', () => resolve()));
    paused.kill('SIGTERM');
    await within(exited, 20_000, 'the paused consumer to close');
    expect(paused.output()).toMatch(/^closed /m);
  });
});
