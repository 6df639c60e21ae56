import { createServer, connect, type Server, type Socket } from 'node:net';
import { LockService } from '../../lib/index.js';
import { createLockApp, testRedisUrl } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';

/**
 * A TCP proxy in front of Redis that can cut every connection (the clients reconnect) and swallow
 * the next SUBSCRIBE: it never reaches Redis, so it stays unanswered on an open connection.
 */
async function startSubscribeSwallowingProxy(target: string) {
  const { hostname, port } = new URL(target);
  const pairs = new Set<[Socket, Socket]>();
  let armed = false;
  let swallowed = 0;
  let subscribes = 0;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    let silent = false;
    client.on('data', (chunk) => {
      const subscribe = /\bsubscribe\b/i.test(chunk.toString('latin1'));
      if (!silent && armed && subscribe) {
        armed = false;
        silent = true;
        swallowed++;
      } else if (!silent && subscribe) {
        subscribes++;
      }
      if (!silent) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    url: `redis://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    get swallowed() {
      return swallowed;
    },
    /** SUBSCRIBEs passed on to Redis. */
    get subscribes() {
      return subscribes;
    },
    swallowNextSubscribe() {
      armed = true;
    },
    /** Cuts every connection, as a Redis restart or a network blip does. */
    cutAll() {
      for (const [client, upstream] of [...pairs]) {
        client.destroy();
        upstream.destroy();
      }
    },
    async close() {
      this.cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * After a reconnect the client re-sends the subscriber connection's SUBSCRIBE by itself (ioredis'
 * autoResubscribe) and nobody observes that command's promise. `app.close()` while it is still
 * unanswered cuts the connection, and the command failed with "Connection is closed." as an
 * unhandled rejection (the raw ioredis error seen failing redis-unreachable.spec on CI, where
 * the app closed right after Redis came back). Jest fails the test on an unhandled rejection.
 */
describe('app.close() while the subscriber re-subscribes after a reconnect', () => {
  it('closes without an unhandled rejection', async () => {
    const proxy = await startSubscribeSwallowingProxy(testRedisUrl());
    const app = await createLockApp({ redis: proxy.url });
    try {
      const locks = app.get(LockService);
      await locks.acquire('resub', { leaseTime: 30_000 });
      // Parked on the release: the subscriber connection subscribes to the lock's channel.
      const waiting = locks.acquire('resub', { waitTimeout: 20_000 });
      waiting.catch(() => undefined);
      await waitFor(() => proxy.subscribes === 1, 10_000, 'the waiter to subscribe');

      proxy.swallowNextSubscribe();
      proxy.cutAll();
      await waitFor(() => proxy.swallowed === 1, 10_000, 'the re-sent SUBSCRIBE to be swallowed');

      await expect(app.close()).resolves.toBeUndefined();
      await expect(waiting).rejects.toThrow();
      // A turn for a rejection left unobserved to surface while this test still runs.
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      await proxy.close();
    }
  });
});
