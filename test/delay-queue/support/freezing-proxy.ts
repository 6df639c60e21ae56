import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of Redis that can make one connection go silent without closing it: the
 * half-open connection a NAT, load balancer or failover can leave behind. Once armed, the next
 * connection that sends BZPOPMIN is frozen: nothing it sends reaches Redis, nothing comes back, and
 * its socket stays open.
 */
export interface FreezingProxy {
  readonly url: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Connections frozen so far. */
  readonly frozen: number;
  freezeNextBlockingConnection(): void;
  close(): Promise<void>;
}

export async function startFreezingProxy(target: string): Promise<FreezingProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let armed = false;
  let connections = 0;
  let frozen = 0;
  const server: Server = createServer((client) => {
    connections++;
    let silent = false;
    const upstream = connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    client.on('data', (chunk) => {
      if (!silent && armed && chunk.toString('latin1').toLowerCase().includes('bzpopmin')) {
        armed = false;
        silent = true;
        frozen++;
        upstream.destroy();
      }
      if (!silent) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!silent) client.write(chunk);
    });
    upstream.on('close', () => {
      if (!silent) client.destroy();
    });
    client.on('close', () => upstream.destroy());
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const listenPort = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `redis://127.0.0.1:${listenPort}`,
    get connections() {
      return connections;
    },
    get frozen() {
      return frozen;
    },
    freezeNextBlockingConnection() {
      armed = true;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
