import { once } from 'node:events';
import { GlideClient } from '@valkey/valkey-glide';
import type { TestingModule } from '@nestjs/testing';
import { createClient } from 'redis';
import { DelayQueueService, LockService, RedisConnectionError } from '../../../lib/index.js';
import { initRedisLockTestingModule, uniqueKeyPrefix, type LocalRedisServer } from '../../../lib/testing/index.js';
import { failOnUnhandledRejections } from '../../support/fail-on-unhandled-rejections.js';
import { waitFor } from '../../support/timing.js';
import { useLocalRedisServer } from '../../support/use-local-redis-server.js';

/*
 * Review of issue 38: a client the application passes in ({ client }), Redis down.
 * Operations contract: every lock and queue call settles within ~2 s with RedisConnectionError.
 */

failOnUnhandledRejections();

async function settle<T>(promise: Promise<T>, capMs: number): Promise<{ ms: number; error?: unknown; value?: T; pending?: true }> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<{ pending: true }>((resolve) => (timer = setTimeout(() => resolve({ pending: true }), capMs)));
  const outcome = await Promise.race([
    promise.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    cap,
  ]);
  clearTimeout(timer);
  return { ms: performance.now() - start, ...outcome };
}

/**
 * A lock and a job call of `app` made while `server` is down (its process killed and exited, and
 * `noticed` true: the app's client saw it), each settled or left pending after 8 s; the server is
 * brought back, then the app closed (within 10 s, asserted), whatever happened.
 */
async function callsWhileDown(server: LocalRedisServer, app: TestingModule, noticed: () => boolean = () => true) {
  const exited = once(server.process, 'exit');
  let bringBack!: () => void;
  const restarted = server.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
  try {
    await exited;
    await waitFor(noticed, 5_000, "the app's client to see Redis gone");
    const [lock, job] = await Promise.all([
      settle(app.get(LockService).tryAcquire('k1'), 8_000),
      settle(app.get(DelayQueueService).schedule('t1', { a: 1 }), 8_000),
    ]);
    if (process.env.R38_DEBUG) console.log('outcomes', lock, job);
    expect({ lockPending: lock.pending, jobPending: job.pending }).toEqual({ lockPending: undefined, jobPending: undefined });
    expect(lock.error).toBeInstanceOf(RedisConnectionError);
    expect(job.error).toBeInstanceOf(RedisConnectionError);
    return { lock, job };
  } finally {
    bringBack();
    await restarted;
    const closed = await settle(app.close(), 10_000);
    if (process.env.R38_DEBUG) console.log('app closed', closed);
    expect(closed.pending).toBeUndefined();
  }
}

describe('review-38: a node-redis client of the app, Redis down', () => {
  const server = useLocalRedisServer();

  it('lock and queue calls fail with RedisConnectionError naming the cause (user node-redis client)', async () => {
    const client = createClient({ url: server.url });
    client.on('error', () => undefined);
    await client.connect();
    const app: TestingModule = await initRedisLockTestingModule({
      redis: { client } as never,
      redisLock: { keyPrefix: uniqueKeyPrefix('r38') },
    });
    try {
      const { lock } = await callsWhileDown(server, app, () => !client.isReady);
      // the contract: the error names the real cause (here: connection refused)
      expect((lock.error as Error).message).toMatch(/ECONNREFUSED|refused/i);
      // no time bound asserted: a client of the app keeps its own timeouts (documented; ioredis' the same)
    } finally {
      // node-redis' own close() may not settle right after an outage (docs/redis-drivers.md): destroy().
      client.destroy();
    }
  });

  it('lock and queue calls settle within ~2.5 s with RedisConnectionError (user GLIDE client)', async () => {
    const client = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: server.port }] });
    const app: TestingModule = await initRedisLockTestingModule({
      redis: { client, url: server.url } as never,
      redisLock: { keyPrefix: uniqueKeyPrefix('r38') },
    });
    try {
      const { lock, job } = await callsWhileDown(server, app);
      expect(lock.ms).toBeLessThan(2_500);
      expect(job.ms).toBeLessThan(2_500);
    } finally {
      client.close();
    }
  });
});
