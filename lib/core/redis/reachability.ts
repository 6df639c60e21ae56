import type { Redis } from 'ioredis';
import type { RedisConnectionError } from '../errors/redis-connection.error.js';
import type { RedisClient } from '../options/redis-lock-config.js';
import { connectionFailureError, describeConnectionCause } from './redis-errors.js';

/** The parts of an ioredis client's command path the bound drives (not in its typed API). */
interface QueuedCommand {
  reject(error: Error): void;
  readonly promise: Promise<unknown>;
}
interface ClientInternals {
  sendCommand(command: QueuedCommand, stream?: unknown): unknown;
  flushQueue(error: Error, options?: { offlineQueue?: boolean; commandQueue?: boolean }): void;
  readonly commandQueue: { readonly length: number };
  prevCommandQueue?: { length: number; shift(): { command: QueuedCommand } | undefined } | null;
}

/**
 * A timer that fires this much later than due says this process itself was stalled (a paused or
 * busy event loop): replies and reconnects may be waiting unread, so the verdict waits one more turn.
 */
const STALL_MS = 50;

/** How soon a bound that ran out during an answered handshake is checked again. */
const HANDSHAKE_RECHECK_MS = 100;

const byClient = new WeakMap<object, RedisReachability>();

/**
 * Whether one connection can reach Redis, and why not: the last connection error it reported
 * (ECONNREFUSED, ENOTFOUND, WRONGPASS, NOAUTH, a connection that stayed silent...), for messages.
 *
 * With `bound` (ms) it also bounds how long a command waits for an unreachable Redis:
 * - a connection with commands outstanding that receives no byte for `silence` ms is destroyed
 *   (a hung server or a black-holed network sends no close), and reconnects;
 * - a connection lost (closed, refused, or destroyed for silence) for `bound` ms rejects every
 *   command waiting on it (queued offline, or sent and awaiting the re-send that follows a
 *   reconnect) with `RedisConnectionError` naming the cause, and from then on rejects new commands
 *   at once, until it is ready again.
 * A shorter outage is ridden out as before: queued commands are sent, and unanswered ones re-sent
 * (the lost-reply guarantee), once it is back. A command rejected here is removed from the queues,
 * so it never runs later behind its caller's back. Time this process itself spent stalled does not
 * count (a late timer checks again after pending I/O is read).
 */
export class RedisReachability {
  private lastError?: Error;
  /** The error this class destroyed a silent socket with, to recognise it when it comes back as the cause. */
  private silenceError?: Error;
  /** Monotonic ms of the last bytes Redis sent on this connection. */
  private lastReplyAt = -Infinity;
  /** Monotonic ms since which the connection has been unusable; undefined while it is ready. */
  private downSince?: number;
  private unreachable = false;
  private boundTimer?: NodeJS.Timeout;
  private silenceTimer?: NodeJS.Timeout;
  private readonly listeners = new Set<() => void>();

  private constructor(
    private readonly client: Redis,
    private readonly endpoint: string,
    private readonly bound: number | undefined,
    private readonly silence: number | undefined,
  ) {}

  /**
   * Watches `client`: observing only, unless `bound` (and `silence`) are set, which only
   * connections the module built get. Idempotent per client.
   */
  static watch(client: Redis, endpoint: string, bound?: { readonly bound: number; readonly silence: number }): RedisReachability {
    const known = byClient.get(client);
    if (known) return known;
    const watched = new RedisReachability(client, endpoint, bound?.bound, bound?.silence);
    byClient.set(client, watched);
    watched.listen();
    return watched;
  }

  /** The watcher of `client`, if it has one. */
  static of(client: RedisClient): RedisReachability | undefined {
    return byClient.get(client);
  }

  /** True once the connection has been unreachable for the bound: calls on it fail at once. */
  get isUnreachable(): boolean {
    return this.unreachable;
  }

  /** Whether the connection is down right now (lost and not ready again), bound or not. */
  get isDown(): boolean {
    return this.downSince !== undefined;
  }

  /** Whether Redis sent anything on this connection since `since` (monotonic ms). */
  heardSince(since: number): boolean {
    return this.lastReplyAt >= since;
  }

  /** Why the connection failed last, in words (the client's own error message), if it did. */
  get cause(): string | undefined {
    return this.lastError === undefined ? undefined : describeConnectionCause(this.lastError);
  }

  get lastConnectionError(): Error | undefined {
    return this.lastError;
  }

  /** Calls `listener` each time the connection becomes unreachable (the bound passed). Returns the unsubscribe. */
  onUnreachable(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The error a call fails with while the connection is unreachable; `action` says what it was doing. */
  failure(action?: string): RedisConnectionError {
    return connectionFailureError(this.endpoint, this.lastError, {
      action,
      downForMs: this.downSince === undefined ? undefined : Math.round(performance.now() - this.downSince),
    });
  }

  /** Stops the timers (the client is being closed). */
  stop(): void {
    clearTimeout(this.boundTimer);
    this.boundTimer = undefined;
    clearTimeout(this.silenceTimer);
    this.silenceTimer = undefined;
  }

  private listen(): void {
    const client = this.client;
    client.on('error', (error: Error) => {
      this.lastError = error;
    });
    client.on('close', () => this.lost());
    const hear = () => this.heard();
    client.on('connect', () => client.stream?.on('data', hear));
    // A client passed in may be connected already.
    if (client.status === 'ready' || client.status === 'connect') client.stream?.on('data', hear);
    client.on('ready', () => {
      this.downSince = undefined;
      this.unreachable = false;
      this.lastError = undefined;
      clearTimeout(this.boundTimer);
      this.boundTimer = undefined;
    });
    if (this.bound === undefined) return;
    const internals = client as unknown as ClientInternals;
    const send = internals.sendCommand;
    internals.sendCommand = (command, stream) => {
      // Handshake and ready-check commands run in 'connect' and must pass for the connection to come back.
      const writing = client.status === 'connect' || client.status === 'ready';
      if (this.unreachable && !writing) {
        command.reject(this.failure());
        return command.promise;
      }
      const sent = send.call(client, command, stream);
      if (writing) this.expectReply();
      return sent;
    };
  }

  private heard(): void {
    this.lastReplyAt = performance.now();
    if (this.silenceTimer === undefined) return;
    clearTimeout(this.silenceTimer);
    this.silenceTimer = undefined;
    this.expectReply();
  }

  /** Arms the silence timer while commands await their replies on the open socket. */
  private expectReply(): void {
    if (this.silence === undefined || this.silenceTimer !== undefined) return;
    if ((this.client as unknown as ClientInternals).commandQueue.length === 0) return;
    this.silenceTimer = this.after(this.silence, () => {
      this.silenceTimer = undefined;
      const stream = this.client.stream;
      if ((this.client as unknown as ClientInternals).commandQueue.length === 0 || !stream || stream.destroyed) return;
      this.silenceError = new Error(`Redis did not answer for ${this.silence} ms`);
      stream.destroy(this.silenceError);
    });
  }

  private lost(): void {
    clearTimeout(this.silenceTimer);
    this.silenceTimer = undefined;
    if (this.downSince === undefined) {
      // A socket destroyed for silence has been unusable since its last byte, `silence` ago.
      const silentFor = this.lastError !== undefined && this.lastError === this.silenceError ? (this.silence ?? 0) : 0;
      this.downSince = performance.now() - silentFor;
      if (this.bound !== undefined) {
        const left = Math.max(0, this.downSince + this.bound - performance.now());
        this.boundTimer = this.after(left, () => {
          this.boundTimer = undefined;
          this.becomeUnreachable();
        });
      }
      return;
    }
    // Each further failed attempt: commands that reached the queues meanwhile (handshake phase) go too.
    if (this.unreachable) this.rejectWaiting();
  }

  /**
   * Runs `then` after `ms` of this process running: a timer that fired late (the event loop was
   * stalled) is checked again after a turn that reads pending I/O first, until one fires on time.
   */
  private after(ms: number, then: () => void): NodeJS.Timeout {
    const due = performance.now() + ms;
    const timer = setTimeout(() => {
      const late = performance.now() - due;
      if (late <= STALL_MS) return then();
      const retry = this.after(Math.min(late, ms, 100), then);
      if (this.boundTimer === timer) this.boundTimer = retry;
      if (this.silenceTimer === timer) this.silenceTimer = retry;
    }, Math.ceil(ms));
    timer.unref();
    return timer;
  }

  private becomeUnreachable(): void {
    if (this.client.status === 'ready' || this.client.status === 'end') return;
    // A new connection whose handshake Redis is answering is coming back: let it finish.
    if (this.client.status === 'connect' && this.downSince !== undefined && this.lastReplyAt > this.downSince) {
      this.boundTimer = this.after(HANDSHAKE_RECHECK_MS, () => {
        this.boundTimer = undefined;
        this.becomeUnreachable();
      });
      return;
    }
    this.unreachable = true;
    this.rejectWaiting();
    for (const listener of [...this.listeners]) listener();
  }

  /** Rejects and removes every command waiting for the connection: queued offline, or awaiting a re-send. */
  private rejectWaiting(): void {
    const internals = this.client as unknown as ClientInternals;
    const error = this.failure();
    // While a new connection shakes hands its command queue holds the handshake; the commands cut
    // off by the last drop then wait in `prevCommandQueue`. Otherwise the command queue is theirs.
    const handshaking = this.client.status === 'connect';
    internals.flushQueue(error, { offlineQueue: true, commandQueue: !handshaking });
    const previous = internals.prevCommandQueue;
    if (handshaking && previous) {
      for (let item = previous.shift(); item; item = previous.shift()) item.command.reject(error);
    }
  }
}
