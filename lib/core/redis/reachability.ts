import type { Redis } from 'ioredis';
import type { RedisConnectionError } from '../errors/redis-connection.error.js';
import type { RedisClient } from '../options/redis-lock-config.js';
import { connectionFailureError, describeConnectionCause } from './redis-errors.js';
import type { ConnectionReachability } from './redis-transport.js';
import { processShared } from '../runtime/process-shared.js';
import { useCommandHook } from './ioredis-command-hooks.js';
import { awaitingReplies, flushQueues, rejectAwaitingReplies, rejectCutOff, socketOf, type QueuedCommand } from './ioredis-internals.js';

/**
 * A timer that fires this much later than due says this process itself was stalled (a paused or
 * busy event loop): replies and reconnects may be waiting unread, so the verdict waits one more turn.
 */
const STALL_MS = 50;
/**
 * Late timers checked again at most this many times in a row: each recheck lets one turn read the
 * pending I/O; a host so loaded that every timer fires late (timers 50+ ms behind for seconds) must
 * not postpone the verdict for as long as the load lasts.
 */
const MAX_STALL_RECHECKS = 5;

/** How soon a bound that ran out during an answered handshake is checked again. */
const HANDSHAKE_RECHECK_MS = 100;

/** Each client's reachability (one per process, shared by both builds: core/runtime/process-shared.ts). */
const byClient = processShared('reachability-by-client', () => new WeakMap<object, RedisReachability>());
/** Errors of commands refused before they were sent (the connection was unreachable): Redis never saw them. */
const unsent = processShared('reachability-unsent', () => new WeakSet<object>());

/**
 * When a command was last handed to a ready connection (`performance.now()` ms): the write that a
 * reply answers, since a reply comes on the connection that carried the command last. Unset while
 * it waits in the client's queue for a lost connection to come back, or when it was refused unsent.
 */
export interface CommandWrite {
  readonly at: number | undefined;
}

/**
 * Whether one connection can reach Redis, and why not: the last connection error it reported
 * (ECONNREFUSED, ENOTFOUND, WRONGPASS, NOAUTH, a connection that stayed silent...), for messages.
 *
 * With `bound` (ms) it also bounds how long a command waits for an unreachable Redis:
 * - commands left unanswered on an open socket for `silence` ms (a hung server, a black-holed
 *   network: no close comes) are rejected where they stand, and new commands fail at once until
 *   Redis sends something again or the connection drops;
 * - a connection lost (closed, refused) for `bound` ms rejects every command waiting on it (queued
 *   offline, or sent and awaiting the re-send that follows a reconnect) and removes them from the
 *   queues, so they never run later behind their caller's back; new commands then fail at once
 *   until it is ready again.
 * Rejections are `RedisConnectionError` naming the cause. A shorter outage is ridden out as before:
 * queued commands are sent, and unanswered ones re-sent (the lost-reply guarantee), once it is back.
 * Time this process itself spent stalled does not count (a late timer checks again after pending
 * I/O is read).
 */
export class RedisReachability implements ConnectionReachability {
  private lastError?: Error;
  /** Monotonic ms since which the open socket has left commands unanswered past `silence`, if it has. */
  private silentSince?: number;
  /** Monotonic ms of the last bytes Redis sent on this connection. */
  private lastReplyAt = -Infinity;
  /** Monotonic ms at which a command was written while none was awaiting its reply. */
  private waitingSince?: number;
  /** Monotonic ms since which the connection has been unusable; undefined while it is ready. */
  private downSince?: number;
  private unreachable = false;
  private boundTimer?: NodeJS.Timeout;
  private silenceTimer?: NodeJS.Timeout;
  private readonly listeners = new Set<() => void>();
  private readonly reachableListeners = new Set<() => void>();
  /** The stamp the next command issued on this connection takes (see `stampWrites`). */
  private nextStamp?: { at: number | undefined };
  /** The stamps of commands not settled yet, by command; `stamped` counts them. */
  private readonly stamps = new WeakMap<object, { at: number | undefined }>();
  private stamped = 0;

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

  /** Whether `error` failed a command before it was sent: the command cannot run in Redis later. */
  static neverSent(error: unknown): boolean {
    return typeof error === 'object' && error !== null && unsent.has(error);
  }

  /** How long a command waits for an unreachable Redis before it fails (ms); undefined when unbounded (observing only). */
  get waitBound(): number | undefined {
    return this.bound;
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

  /**
   * Whether commands have been waiting on the open socket for at least `ms` with nothing heard from
   * Redis since the oldest of them was sent (a paused or black-holed server).
   */
  hungFor(ms: number): boolean {
    if (!awaitingReplies(this.client) || this.waitingSince === undefined) return false;
    const since = Math.max(this.waitingSince, this.lastReplyAt);
    return performance.now() - since >= ms;
  }

  /**
   * Runs `send`, which issues one command on this connection (synchronously, as ioredis does), and
   * stamps that command's writes (`CommandWrite.at`: the last one). Once its reply is in, Redis ran
   * it no earlier than that write, which is later than `send` when the command waited in the
   * client's queue for a lost connection to come back, or was re-sent after a reconnect: a lease
   * the command took or renewed in Redis (a job claim's visibility) is counted from there. Stays
   * unset for a command refused before it was written.
   */
  stampWrites<T>(send: () => Promise<T>): { readonly reply: Promise<T>; readonly written: CommandWrite } {
    const written: { at: number | undefined } = { at: undefined };
    this.nextStamp = written;
    try {
      return { reply: send(), written };
    } finally {
      this.nextStamp = undefined;
    }
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

  /**
   * Calls `listener` each time commands can be sent again after the connection was unusable (a
   * silent server answers again, or a lost connection is ready again). Returns the unsubscribe.
   */
  onReachable(listener: () => void): () => void {
    this.reachableListeners.add(listener);
    return () => this.reachableListeners.delete(listener);
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
    client.on('connect', () => socketOf(client)?.on('data', hear));
    // A client passed in may be connected already.
    if (client.status === 'ready' || client.status === 'connect') socketOf(client)?.on('data', hear);
    client.on('ready', () => {
      const wasDown = this.downSince !== undefined || this.unreachable;
      this.downSince = undefined;
      this.unreachable = false;
      this.lastError = undefined;
      clearTimeout(this.boundTimer);
      this.boundTimer = undefined;
      if (wasDown) this.reachableAgain();
    });
    this.noteWrites();
    if (this.bound === undefined) return;
    useCommandHook(client, 'refuse-unreachable', (next) => (command, stream) => {
      // Handshake and ready-check commands run in 'connect' and must pass for the connection to come back.
      const writing = client.status === 'connect' || client.status === 'ready';
      if (this.unreachable && (!writing || this.silentSince !== undefined)) {
        const error = this.failure();
        unsent.add(error);
        command.reject(error);
        return command.promise;
      }
      const sent = next(command, stream);
      if (writing) this.expectReply();
      return sent;
    });
  }

  /**
   * Notes when commands start waiting on an idle socket (see `hungFor`), and stamps the writes of
   * the commands `stampWrites` issued. A command is written only while the connection is ready (or
   * shaking hands: a stamp then is early by a handshake at most, never late); one issued before is
   * queued by the client, and one cut off by a lost connection is kept for a re-send: either comes
   * through here again when it is written.
   */
  private noteWrites(): void {
    const client = this.client;
    useCommandHook(client, 'note-writes', (next) => (command, stream) => {
      const writing = client.status === 'connect' || client.status === 'ready';
      if (writing && awaitingReplies(client) === 0) this.waitingSince = performance.now();
      if (this.nextStamp !== undefined || this.stamped > 0) this.stamp(command, writing);
      return next(command, stream);
    });
  }

  /** Stamps a write of `command` (when `writing`) if `stampWrites` issued it; its first pass here ties it to its stamp until it settles. */
  private stamp(command: QueuedCommand, writing: boolean): void {
    let stamp = this.nextStamp;
    if (stamp !== undefined) {
      this.nextStamp = undefined;
      this.stamps.set(command, stamp);
      this.stamped++;
      const settled = () => {
        if (this.stamps.delete(command)) this.stamped--;
      };
      command.promise.then(settled, settled);
    } else {
      stamp = this.stamps.get(command);
      if (stamp === undefined) return;
    }
    if (writing) stamp.at = performance.now();
  }

  private heard(): void {
    this.lastReplyAt = performance.now();
    if (this.silentSince !== undefined) {
      // The silent server answers again (SIGCONT, a healed network): usable again.
      this.silentSince = undefined;
      if (this.downSince === undefined) {
        this.unreachable = false;
        this.lastError = undefined;
        this.reachableAgain();
      }
    }
    if (this.silenceTimer === undefined) return;
    clearTimeout(this.silenceTimer);
    this.silenceTimer = undefined;
    this.expectReply();
  }

  /**
   * Arms the silence timer while commands await their replies on the open socket. When it runs
   * out, those commands are rejected where they stand (kept in the client's queue, so the replies
   * that may still come are matched to them and dropped) and new ones fail at once, until Redis
   * sends something again or the connection drops. The socket is not cut: a command that is only
   * slow finishes, and nothing is re-sent in a loop.
   */
  private expectReply(): void {
    if (this.silence === undefined || this.silenceTimer !== undefined || this.silentSince !== undefined) return;
    if (!awaitingReplies(this.client)) return;
    const armedAt = performance.now();
    this.silenceTimer = this.after(this.silence, () => {
      this.silenceTimer = undefined;
      if (!awaitingReplies(this.client) || this.client.status !== 'ready' || this.heardSince(armedAt)) return;
      this.silentSince = armedAt;
      this.lastError = new Error(`Redis did not answer for ${Math.round(performance.now() - armedAt)} ms`);
      this.unreachable = true;
      const error = this.failure();
      rejectAwaitingReplies(this.client, error);
      flushQueues(this.client, error, { sent: false });
      for (const listener of [...this.listeners]) listener();
    });
  }

  /** Tells the listeners, after this turn (the data or ready handler that saw it finishes first). */
  private reachableAgain(): void {
    if (this.reachableListeners.size === 0) return;
    setImmediate(() => {
      if (this.unreachable || this.downSince !== undefined) return;
      for (const listener of [...this.reachableListeners]) listener();
    });
  }

  private lost(): void {
    clearTimeout(this.silenceTimer);
    this.silenceTimer = undefined;
    const silentSince = this.silentSince;
    this.silentSince = undefined;
    if (this.downSince === undefined) {
      // A socket that had gone silent has been unusable since then (and unreachable already).
      this.downSince = silentSince ?? performance.now();
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
   * stalled) is checked again after a turn that reads pending I/O first, until one fires on time
   * or `MAX_STALL_RECHECKS` rechecks were late too.
   */
  private after(ms: number, then: () => void, rechecks = 0): NodeJS.Timeout {
    const due = performance.now() + ms;
    const timer = setTimeout(() => {
      const late = performance.now() - due;
      if (late <= STALL_MS || rechecks >= MAX_STALL_RECHECKS) return then();
      const retry = this.after(Math.min(late, ms, 100), then, rechecks + 1);
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
    const error = this.failure();
    // While a new connection shakes hands its command queue holds the handshake; the commands cut
    // off by the last drop then wait apart (`rejectCutOff`). Otherwise the command queue is theirs.
    const handshaking = this.client.status === 'connect';
    flushQueues(this.client, error, { sent: !handshaking });
    if (handshaking) rejectCutOff(this.client, error);
  }
}
