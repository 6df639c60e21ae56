import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy that injects network faults between a client under test and a real Redis.
 *
 * - pass-through (default), or with added latency per chunk in each direction;
 * - `blackhole()`: connections stay open and new ones are accepted, but nothing gets through in
 *   either direction until `heal()` (held bytes are then delivered, as TCP would after a partition
 *   heals in time) — or `resetAll()` kills them as a partition that outlasts TCP would;
 * - `resetAll()`: every open connection is reset (RST) at once;
 * - `stop()`: closes the listener and every connection.
 */
export class FaultProxy {
  private readonly links = new Set<Link>();
  private latencyMs = 0;
  private blackholed = false;
  /** Connections accepted since start, for assertions ("the client reconnected"). */
  accepted = 0;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: { host?: string; port: number }): Promise<FaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (!address || typeof address !== 'object') throw new Error('proxy has no port');
    const proxy = new FaultProxy(server, address.port);
    server.on('connection', (client) => proxy.accept(client, target.host ?? '127.0.0.1', target.port));
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get openConnections(): number {
    return this.links.size;
  }

  setLatency(ms: number): void {
    this.latencyMs = ms;
  }

  blackhole(): void {
    this.blackholed = true;
  }

  heal(): void {
    this.blackholed = false;
    for (const link of this.links) link.flush();
  }

  resetAll(): void {
    for (const link of [...this.links]) link.reset();
  }

  async stop(): Promise<void> {
    this.resetAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, host: string, port: number): void {
    this.accepted++;
    const upstream = createConnection({ host, port });
    const link = new Link(client, upstream, () => this.latencyMs, () => this.blackholed, () => this.links.delete(link));
    this.links.add(link);
  }
}

/** One proxied connection: two sockets and the bytes held while black-holed. */
class Link {
  private readonly held: Array<{ to: Socket; chunk: Buffer }> = [];
  private closed = false;

  constructor(
    private readonly client: Socket,
    private readonly upstream: Socket,
    private readonly latency: () => number,
    private readonly blackholed: () => boolean,
    private readonly onClose: () => void,
  ) {
    client.on('data', (chunk) => this.forward(upstream, chunk));
    upstream.on('data', (chunk) => this.forward(client, chunk));
    for (const socket of [client, upstream]) {
      socket.on('error', () => this.reset());
      socket.on('close', () => this.reset());
    }
  }

  flush(): void {
    for (const { to, chunk } of this.held.splice(0)) this.write(to, chunk);
  }

  reset(): void {
    if (this.closed) return;
    this.closed = true;
    this.held.length = 0;
    for (const socket of [this.client, this.upstream]) {
      if (socket.destroyed) continue;
      // A socket still connecting (the upstream refused or never answered) cannot be reset: RST
      // needs an open connection, and resetAndDestroy() on it leaves a handle that keeps the process alive.
      if (socket.connecting) socket.destroy();
      else socket.resetAndDestroy();
    }
    this.onClose();
  }

  private forward(to: Socket, chunk: Buffer): void {
    if (this.blackholed()) {
      this.held.push({ to, chunk });
      return;
    }
    const delay = this.latency();
    if (delay > 0) setTimeout(() => this.write(to, chunk), delay);
    else this.write(to, chunk);
  }

  private write(to: Socket, chunk: Buffer): void {
    if (!this.closed && !to.destroyed) to.write(chunk);
  }
}
