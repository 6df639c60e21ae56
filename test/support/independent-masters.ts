import { Redis } from 'ioredis';
import { FaultProxy } from '../../tools/fault-proxy.js';
import { hasRedisServerBinary, startLocalRedisServer, type LocalRedisServer } from '../../lib/testing/local-redis-server.js';

export const NO_REDIS_SERVER_MESSAGE = [
  'The Redlock tests start their own independent Redis masters and need `redis-server` on PATH, which was not found.',
  'Install it, then run the tests again:',
  '  - Debian/Ubuntu: `sudo apt-get install redis-server`;',
  '  - macOS: `brew install redis`;',
  '  - or put any redis-server 6.2+ binary on PATH.',
].join('\n');

/**
 * N independent `redis-server` processes on free loopback ports, each in its own temp dir with AOF
 * (`appendfsync always`, so a killed master comes back with its data), each also reachable through
 * a fault proxy that can black-hole it.
 *
 * Clients that only see masters killed and restarted connect to `urls`; clients that see masters
 * black-holed connect to `proxiedUrls`. (Kill a master only behind `urls`: a proxy whose upstream
 * connect is refused can leave a socket handle open that keeps Jest from exiting.)
 */
export interface IndependentMasters {
  /** Direct URLs, one per master. */
  readonly urls: string[];
  /** URLs through each master's fault proxy, for `blackhole(i)`. */
  readonly proxiedUrls: string[];
  readonly servers: readonly LocalRedisServer[];
  readonly proxies: readonly FaultProxy[];
  /** Kills master `i` (SIGKILL): its port refuses connections until `start(i)`. */
  kill(i: number): Promise<void>;
  /** Starts a killed master again on the same port and directory (its AOF data comes back). */
  start(i: number): Promise<void>;
  /** Master `i` stops answering: connections stay open, nothing gets through, until `heal(i)`. */
  blackhole(i: number): void;
  /** Ends a black hole; open connections are reset (a partition that outlasted TCP), so clients reconnect. */
  heal(i: number): void;
  /** A direct client to master `i` (not through its proxy), for looking at or tampering with keys. */
  raw(i: number): Redis;
  /** Stops every server and proxy, and disconnects the raw clients. */
  stop(): Promise<void>;
}

/** Starts `count` masters. Fails (never skips) when `redis-server` is not installed. */
export async function startIndependentMasters(count = 3): Promise<IndependentMasters> {
  if (!hasRedisServerBinary()) throw new Error(NO_REDIS_SERVER_MESSAGE);
  const servers = await Promise.all(
    Array.from({ length: count }, () => startLocalRedisServer({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] })),
  );
  const proxies = await Promise.all(servers.map((server) => FaultProxy.start({ port: server.port })));
  const raws = new Map<number, Redis>();
  return {
    urls: servers.map((server) => server.url),
    proxiedUrls: proxies.map((proxy) => proxy.url),
    servers,
    proxies,
    async kill(i) {
      const child = servers[i].process;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    },
    async start(i) {
      // restart() on a process that has exited already just launches it again (same port and dir).
      await servers[i].restart();
    },
    blackhole(i) {
      proxies[i].blackhole();
    },
    heal(i) {
      proxies[i].resetAll();
      proxies[i].heal();
    },
    raw(i) {
      let client = raws.get(i);
      if (!client) {
        // A master killed by the spec leaves a dead socket: 100 ms, not ioredis' 2 s, to give up on it at disconnect.
        client = new Redis(servers[i].url, { maxRetriesPerRequest: 1, disconnectTimeout: 100 });
        client.on('error', () => undefined);
        raws.set(i, client);
      }
      return client;
    },
    async stop() {
      for (const client of raws.values()) client.disconnect();
      await Promise.all(proxies.map((proxy) => proxy.stop()));
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}
