import { RedisConnectionError } from '../../lib/index.js';
import { startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';
import { muteNestLogger } from '../support/mute-nest-logger.js';
import { rawRedis, uniquePrefix } from '../support/test-app.js';
import { rejectionOf } from '../support/thrown.js';
import { waitFor } from '../support/timing.js';
import { createDelayApp, type DelayTestApp } from './support/delay-test-app.js';

/**
 * `waitFor` while Redis is down (operations contract): a wait that cannot begin fails with
 * RedisConnectionError within the connection's bound (`unreachableTimeout`, 2 s by default); a
 * wait already begun rides the outage out and resolves once the job completes after Redis is back.
 */
describe('waitFor while Redis is down', () => {
  let server: LocalRedisServer;
  let waiting: DelayTestApp;
  let running: DelayTestApp;
  beforeAll(async () => {
    muteNestLogger('error', 'warn');
    server = await startLocalRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
    const keyPrefix = uniquePrefix('wait-for-outage');
    [waiting, running] = await Promise.all([1, 2].map(() => createDelayApp({ redis: server.url, keyPrefix })));
  });
  afterAll(async () => {
    await Promise.all([waiting?.close(), running?.close()]);
    await server?.stop();
  });

  it('fails a new wait with RedisConnectionError within the bound, and resolves a wait begun before the outage', async () => {
    let go!: () => void;
    const gate = new Promise<void>((resolve) => (go = resolve));
    let started!: () => void;
    const running$ = new Promise<void>((resolve) => (started = resolve));
    const consumer = running.queue.consume(
      'outage',
      async () => {
        started();
        await gate;
        return 'after the outage';
      },
      { keepCompleted: { count: 10 }, visibilityTimeout: 60_000 },
    );
    const id = await waiting.queue.schedule('outage', null);
    const begun = waiting.queue.waitFor('outage', id);
    const probe = rawRedis(server.url);
    await waitFor(async () => (await probe.hexists(`${waiting.keyPrefix}:dq:{outage}:waited`, id)) === 1, 10_000, 'the wait in place');
    probe.disconnect();
    await running$; // claimed before the outage: it completes after it

    let bringBack!: () => void;
    const restarted = server.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
    for (const topic of ['outage', 'another-topic']) {
      const startedAt = performance.now();
      const error = await rejectionOf(() => waiting.queue.waitFor(topic, 'any'));
      expect(error).toBeInstanceOf(RedisConnectionError);
      expect(performance.now() - startedAt).toBeLessThan(6_000);
    }
    bringBack();
    await restarted;
    go();
    expect(await begun).toBe('after the outage');
    await consumer.close();
  });
});
