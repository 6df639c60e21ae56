import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';
import { deferred, waitFor } from '../support/timing.js';
import { uniquePrefix } from '../support/test-app.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';

const TOPIC = 'outage.buffered';
const VISIBILITY = 20_000;
const OUTAGE_MS = 8_000;

failOnUnhandledRejections();

/**
 * "Jobs a consumer took but did not start are handed back with their attempt undone" and "a call
 * failed by the bound leaves nothing taken by nobody" (docs/delayed-jobs.md, docs/guarantees.md), for
 * an outage shorter than the visibility timeout: a consumer (concurrency 1) runs a long job with
 * jobs claimed behind it in its prefetch buffer when Redis goes away. The buffered jobs' hand-back
 * fails while Redis is down; their claims must stay held and the hand-back be retried once Redis is
 * back, so each of them runs once, on its first attempt (`maxAttempts: 1`: a job left claimed by
 * nobody would go to the dead letters at its deadline without ever running).
 */
describe('a short outage with jobs in a prefetch buffer', () => {
  let server: LocalRedisServer;
  let app: DelayTestApp | undefined;

  beforeAll(async () => {
    muteNestLogger('error');
    // appendfsync always: the outage loses nothing Redis answered.
    server = await startLocalRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
  });
  afterAll(async () => {
    await app?.close();
    await server.stop();
  });

  it('hands the buffered jobs back once Redis is back: each runs once, on its first attempt, none dead', async () => {
    app = await createDelayApp({ redis: server.url, keyPrefix: uniquePrefix('obj'), delayQueue: { maxAttempts: 1 } });
    const queue = app.queue;
    const runs: Array<{ payload: string; attempt: number }> = [];
    const longStarted = deferred();
    const finishLong = deferred();
    queue.consume<string>(
      TOPIC,
      async (payload, job) => {
        runs.push({ payload, attempt: job.attempt });
        if (payload === 'long') {
          longStarted.resolve();
          await finishLong.promise;
        }
      },
      { concurrency: 1, visibilityTimeout: VISIBILITY },
    );
    // Short jobs first: their quick finishes let the consumer claim ahead of its one slot, so that the
    // claim that takes 'long' also takes jobs of the B series into the buffer behind it.
    const at = Date.now() + 300;
    await queue.scheduleMany(TOPIC, [
      ...Array.from({ length: 12 }, (_, i) => ({ payload: `short-${i}`, at })),
      { payload: 'long', at },
      ...Array.from({ length: 6 }, (_, i) => ({ payload: `B${i}`, at })),
    ]);
    await longStarted.promise;
    // Claimed but not started (concurrency 1): the jobs in the buffer behind 'long'.
    const buffered = (await queue.stats(TOPIC)).active - 1;
    // Redis goes away at once, before the buffer's hold limit (250 ms) hands the buffered jobs back.
    await server.restart({ signal: 'SIGKILL', downtimeMs: OUTAGE_MS });
    expect(buffered).toBeGreaterThanOrEqual(2);
    finishLong.resolve();

    const bSeries = Array.from({ length: 6 }, (_, i) => `B${i}`);
    // Waits for the jobs to be settled (run, or dead): no timing window decides the outcome.
    await waitFor(
      async () => {
        const stats = await queue.stats(TOPIC);
        return (stats.due === 0 && stats.scheduled === 0 && stats.active === 0) || undefined;
      },
      VISIBILITY + 15_000,
      'every job to be settled',
      { every: 200, retryErrors: true },
    );
    const dead = (await queue.deadLetters(TOPIC, { limit: 100 })).map((job) => job.id);
    expect(dead).toEqual([]);
    for (const name of bSeries) expect(runs.filter((run) => run.payload === name)).toEqual([{ payload: name, attempt: 1 }]);
  }, 90_000);
});
