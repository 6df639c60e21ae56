import { Redis } from 'ioredis';
import { RedisReachability } from '../../lib/core/redis/reachability.js';
import { lockReconnectStrategy } from '../../lib/core/redis/lock-reconnect-strategy.js';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { testRedisUrl } from '../support/test-app.js';
import { waitFor } from '../support/timing.js';

/**
 * `RedisReachability.stampWrites`: when the command a call issued was last handed to a ready
 * connection, the write its reply answers. A lease the command takes in Redis (a job claim's
 * visibility, test/delay-queue/claim-sent-during-outage.spec.ts) starts no earlier than that, which
 * is later than the call when the command waited for a lost connection or was re-sent after one.
 */
describe('the write stamp of a command', () => {
  let proxy: FaultProxy;
  let client: Redis;
  let reachability: RedisReachability;

  beforeAll(async () => {
    proxy = await FaultProxy.start({ port: Number(new URL(testRedisUrl()).port) });
    client = new Redis(proxy.url, { retryStrategy: lockReconnectStrategy, maxRetriesPerRequest: null });
    client.on('error', () => undefined);
    reachability = RedisReachability.watch(client, proxy.url, { bound: 20_000, silence: 20_000 });
    await client.ping();
  });
  afterAll(async () => {
    proxy.heal();
    proxy.restore();
    reachability.stop();
    client.disconnect();
    await proxy.stop();
  });

  it('is the call itself on a ready connection', async () => {
    const issued = performance.now();
    const { reply, written } = reachability.stampWrites(() => client.ping());
    expect(written.at).toBeGreaterThanOrEqual(issued);
    const at = written.at;
    expect(await reply).toBe('PONG');
    expect(written.at).toBe(at);
  });

  it('is the write once the connection is back, for a command issued while it was down', async () => {
    proxy.cut();
    await waitFor(() => reachability.isDown || undefined, 5_000, 'the connection to be seen lost', { every: 5 });
    const { reply, written } = reachability.stampWrites(() => client.ping());
    await waitFor(() => (client.status === 'reconnecting' && proxy.accepted > 1) || undefined, 5_000, 'a refused reconnect', { every: 5 });
    expect(written.at).toBeUndefined();
    const restored = performance.now();
    proxy.restore();
    expect(await reply).toBe('PONG');
    expect(written.at).toBeGreaterThanOrEqual(restored);
  });

  it('is the last write, for a command cut off by a lost connection and re-sent after the reconnect', async () => {
    await waitFor(() => client.status === 'ready' || undefined, 5_000, 'the client ready');
    proxy.blackhole();
    const issued = performance.now();
    const { reply, written } = reachability.stampWrites(() => client.ping());
    const first = written.at;
    expect(first).toBeGreaterThanOrEqual(issued);
    const reset = performance.now();
    // The stall outlasts TCP: the connection (the ping held in it) is reset; the reconnect goes through.
    proxy.resetAll();
    proxy.heal();
    expect(await reply).toBe('PONG');
    expect(written.at).toBeGreaterThan(reset);
  });

  it('stays unset for a command refused before it was written, and stamps nothing else', async () => {
    const bounded = new Redis(proxy.url, { retryStrategy: lockReconnectStrategy, lazyConnect: true });
    bounded.on('error', () => undefined);
    const watched = RedisReachability.watch(bounded, proxy.url, { bound: 200, silence: 200 });
    try {
      await bounded.connect();
      proxy.cut();
      await waitFor(() => watched.isUnreachable || undefined, 5_000, 'the bound to pass', { every: 5 });
      const { reply, written } = watched.stampWrites(() => bounded.ping());
      await expect(reply).rejects.toThrow();
      expect(RedisReachability.neverSent(await reply.catch((error: unknown) => error))).toBe(true);
      expect(written.at).toBeUndefined();
      proxy.restore();
      await waitFor(() => bounded.status === 'ready' || undefined, 5_000, 'the client ready again');
      // The next command, issued outside stampWrites, takes no stamp of the refused one.
      expect(await bounded.ping()).toBe('PONG');
      expect(written.at).toBeUndefined();
    } finally {
      proxy.restore();
      watched.stop();
      bounded.disconnect();
    }
  });
});
