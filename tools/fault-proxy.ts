import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { isPush, readCommand, respValueLength } from './resp-reader.js';

/** What a lost-reply fault hit: the command (Redis ran it) and the reply that never reached the client. */
export interface LostReply {
  readonly args: string[];
  /** The dropped reply in RESP (an error reply starts with '-': then the command did not do its work). */
  readonly reply: string;
}

/** A one-shot lost reply: which command it hits, and how to tell the test it happened. */
interface LostReplyFault {
  readonly match: (args: readonly string[]) => boolean;
  /** Matching commands still to let through before the one whose reply is lost. */
  skip: number;
  readonly done: (lost: LostReply) => void;
}

/** Counts the client commands that pass the proxy and match, from `observe()` until `stop()`. */
export interface CommandObserver {
  readonly count: number;
  stop(): void;
}

/**
 * A loopback TCP proxy that injects network faults between a client under test and a real Redis.
 *
 * - pass-through (default), or with added latency per chunk in each direction;
 * - `setReplyLatency(ms)`: latency on the replies only (an asymmetric path, or a reply stuck in a
 *   stalled link while the command ran at once): the command reaches Redis on time, its reply late;
 * - `blackhole()`: connections stay open and new ones are accepted, but nothing gets through in
 *   either direction until `heal()` (held bytes are then delivered, as TCP would after a partition
 *   heals in time) — or `resetAll()` kills them as a partition that outlasts TCP would;
 * - `resetAll()`: every open connection is reset (RST) at once;
 * - `cut()`: an outage of this link: every open connection is reset and each new one is reset as
 *   soon as it is accepted (the client sees its connection refused or dropped), until `restore()`;
 * - `loseReply(match, nth)`: the reply to the nth command that `match` accepts is dropped after
 *   Redis executed the command, and that connection is reset. A client that re-sends unanswered
 *   commands after reconnecting (ioredis' `autoResendUnfulfilledCommands`, on by default) then runs
 *   the command a second time: the fault every script must be safe against. Not combined with
 *   `blackhole()`.
 * - `stop()`: closes the listener and every connection.
 */
export class FaultProxy {
  private readonly links = new Set<Link>();
  private latencyMs = 0;
  private replyLatencyMs = 0;
  private blackholed = false;
  private isCut = false;
  private readonly lostReplies: LostReplyFault[] = [];
  private readonly observers = new Set<{ match: (args: readonly string[]) => boolean; count: number }>();
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

  /** Latency on top of `setLatency` for the replies only (see the class comment). */
  setReplyLatency(ms: number): void {
    this.replyLatencyMs = ms;
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

  /** Starts an outage (see the class comment): no connection gets through until `restore()`. */
  cut(): void {
    this.isCut = true;
    this.resetAll();
  }

  /** Ends an outage started by `cut()`: new connections go through again. */
  restore(): void {
    this.isCut = false;
  }

  /**
   * Arms one lost reply (see the class comment): resolves with the command's arguments once its
   * reply was dropped and its connection reset. Faults armed together hit distinct commands.
   *
   * @example
   * const lost = proxy.loseReply(FaultProxy.script(releaseLockScript));
   * await handle.release(); // runs twice in Redis, resolves once
   * await lost;
   */
  loseReply(match: (args: readonly string[]) => boolean, nth = 1): Promise<string[]> {
    return this.loseReplyDetailed(match, nth).then((lost) => lost.args);
  }

  /**
   * `loseReply`, resolving with the dropped reply too, so a test can tell a command that ran (and
   * ran again when re-sent) from one Redis refused (for example `-NOSCRIPT`, after which the client
   * sends something else).
   */
  loseReplyDetailed(match: (args: readonly string[]) => boolean, nth = 1): Promise<LostReply> {
    return new Promise((done) => this.lostReplies.push({ match, skip: nth - 1, done }));
  }

  /** Drops every lost-reply fault that has not hit a command yet (their promises never resolve). */
  disarmLostReplies(): void {
    this.lostReplies.length = 0;
  }

  /** Starts counting the commands `match` accepts as they pass towards Redis (re-sent ones included). */
  observe(match: (args: readonly string[]) => boolean): CommandObserver {
    const observer = { match, count: 0 };
    this.observers.add(observer);
    return {
      get count() {
        return observer.count;
      },
      stop: () => void this.observers.delete(observer),
    };
  }

  /** Faults armed with `loseReply` that have not hit a command yet. */
  get pendingLostReplies(): number {
    return this.lostReplies.length;
  }

  /** Matches EVALSHA/EVAL of a script (by SHA or body) as a `loseReply` target; `where` narrows on its keys and args. */
  static script(
    script: { readonly sha: string; readonly source: string },
    where: (keysAndArgs: readonly string[]) => boolean = () => true,
  ): (args: readonly string[]) => boolean {
    return (args) => {
      const command = args[0]?.toLowerCase();
      const ours = (command === 'evalsha' && args[1] === script.sha) || (command === 'eval' && args[1] === script.source);
      return ours && where(args.slice(3));
    };
  }

  /** The lost-reply fault a command just sent on some connection triggers, if any (it is then disarmed). */
  private lostReplyFor(args: string[]): LostReplyFault | undefined {
    for (const observer of this.observers) if (observer.match(args)) observer.count++;
    const index = this.lostReplies.findIndex((fault) => fault.match(args) && fault.skip-- === 0);
    return index === -1 ? undefined : this.lostReplies.splice(index, 1)[0];
  }

  async stop(): Promise<void> {
    this.resetAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, host: string, port: number): void {
    this.accepted++;
    if (this.isCut) {
      client.on('error', () => {});
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection({ host, port });
    const link = new Link(client, upstream, {
      latency: (to) => this.latencyMs + (to === 'client' ? this.replyLatencyMs : 0),
      blackholed: () => this.blackholed,
      lostReplyFor: (args) => this.lostReplyFor(args),
      rearm: (fault) => this.lostReplies.push(fault),
      onClose: () => this.links.delete(link),
    });
    this.links.add(link);
  }
}

interface LinkControls {
  /** The latency of bytes going to the client (replies) or to Redis (commands). */
  latency(to: 'client' | 'redis'): number;
  blackholed(): boolean;
  lostReplyFor(args: string[]): LostReplyFault | undefined;
  /** Gives back a fault whose command lost its connection before the reply came: it hits the re-sent command. */
  rearm(fault: LostReplyFault): void;
  onClose(): void;
}

/**
 * One proxied connection: two sockets and the bytes held while black-holed. Commands and replies
 * are counted (RESP framing) so that the reply of one given command can be dropped.
 */
class Link {
  private readonly held: Array<{ to: Socket; chunk: Buffer }> = [];
  /** Per destination, steps waiting for their latency, in arrival order (see `inOrder`). */
  private readonly queues = new Map<Socket, Array<{ due: number; step: () => void }>>();
  private closed = false;
  private requestBuffer = Buffer.alloc(0);
  private replyBuffer = Buffer.alloc(0);
  private commandsSeen = 0;
  private repliesSeen = 0;
  /** Commands (by their index on this link) whose reply is to be lost. */
  private readonly doomed = new Map<number, { fault: LostReplyFault; args: string[] }>();

  constructor(
    private readonly client: Socket,
    private readonly upstream: Socket,
    private readonly controls: LinkControls,
  ) {
    client.on('data', (chunk: Buffer) => {
      this.countCommands(chunk);
      this.forward(upstream, chunk);
    });
    upstream.on('data', (chunk: Buffer) => this.forwardReplies(chunk));
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
    // A doomed command whose reply never came (the link died first, e.g. `resetAll()`): the client
    // re-sends it, and the fault must hit that, or the test waiting for it would wait forever.
    for (const { fault } of this.doomed.values()) this.controls.rearm({ ...fault, skip: 0 });
    this.doomed.clear();
    for (const socket of [this.client, this.upstream]) {
      if (socket.destroyed) continue;
      // A socket still connecting (the upstream refused or never answered) cannot be reset: RST
      // needs an open connection, and resetAndDestroy() on it leaves a handle that keeps the process alive.
      // A socket whose peer already closed its side (a client that sent QUIT) is simply closed:
      // resetAndDestroy() on it leaves a handle that libuv keeps polling (100 % CPU, the process never exits).
      if (socket.connecting || socket.readableEnded || !socket.writable) socket.destroy();
      else socket.resetAndDestroy();
    }
    this.controls.onClose();
  }

  private countCommands(chunk: Buffer): void {
    let buffer = this.requestBuffer.length > 0 ? Buffer.concat([this.requestBuffer, chunk]) : chunk;
    let at = 0;
    for (;;) {
      const command = readCommand(buffer, at);
      if (!command) break;
      at += command.length;
      const index = this.commandsSeen++;
      const fault = this.controls.lostReplyFor(command.args);
      if (fault) this.doomed.set(index, { fault, args: command.args });
    }
    buffer = buffer.subarray(at);
    this.requestBuffer = Buffer.from(buffer);
  }

  /** Forwards whole replies; at a doomed one, forwards what came before it, drops the rest and resets. */
  private forwardReplies(chunk: Buffer): void {
    const buffer = this.replyBuffer.length > 0 ? Buffer.concat([this.replyBuffer, chunk]) : chunk;
    let at = 0;
    for (;;) {
      const length = respValueLength(buffer, at);
      if (length === -1) break;
      if (!isPush(buffer, at)) {
        const doomed = this.doomed.get(this.repliesSeen++);
        if (doomed) {
          this.doomed.delete(this.repliesSeen - 1);
          this.forwardThenReset(buffer.subarray(0, at), doomed, buffer.toString('utf8', at, at + length));
          return;
        }
      }
      at += length;
    }
    // Only whole replies go on, so a doomed reply can never be half delivered.
    if (at > 0) this.forward(this.client, Buffer.from(buffer.subarray(0, at)));
    this.replyBuffer = Buffer.from(buffer.subarray(at));
  }

  private forwardThenReset(before: Buffer, doomed: { fault: LostReplyFault; args: string[] }, reply: string): void {
    const finish = () => {
      this.write(this.client, before);
      this.reset();
      doomed.fault.done({ args: doomed.args, reply });
    };
    this.inOrder(this.client, finish);
  }

  private forward(to: Socket, chunk: Buffer): void {
    if (this.controls.blackholed()) {
      this.held.push({ to, chunk });
      return;
    }
    this.inOrder(to, () => this.write(to, chunk));
  }

  /**
   * Runs `step` after the current latency, but never before a step queued earlier for the same
   * socket: a latency lowered while bytes are still delayed must not let newer bytes overtake them
   * (no TCP connection reorders, and a client would pair replies with the wrong commands).
   */
  private inOrder(to: Socket, step: () => void): void {
    let queue = this.queues.get(to);
    if (!queue) this.queues.set(to, (queue = []));
    queue.push({ due: performance.now() + this.controls.latency(to === this.client ? 'client' : 'redis'), step });
    if (queue.length === 1) this.drain(queue);
  }

  private drain(queue: Array<{ due: number; step: () => void }>): void {
    while (queue.length > 0 && queue[0].due <= performance.now()) queue.shift()!.step();
    if (queue.length > 0) setTimeout(() => this.drain(queue), Math.max(1, Math.ceil(queue[0].due - performance.now())));
  }

  private write(to: Socket, chunk: Buffer): void {
    if (!this.closed && !to.destroyed && chunk.length > 0) to.write(chunk);
  }
}
