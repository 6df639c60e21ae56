import type { SubscriberConnection } from '../core/redis/redis-transport.js';
import type { WakeConnectionSource } from './protocols/lock-protocol.interface.js';
import { timerDelay } from '../core/time/timer-delay.js';

/** Why a parked waiter resumed. */
export type WakeReason = 'woken' | 'timeout' | 'aborted';

/** A waiter's membership in one wake channel; `leave()` exactly once when done waiting. */
export interface WakeChannel {
  /**
   * Parks until a release message for this waiter, `timeoutMs`, or `signal`, whichever comes first.
   * `front`: a waiter that was woken but lost the race to another process keeps its place in line.
   */
  wait(timeoutMs: number, signal?: AbortSignal, front?: boolean): Promise<WakeReason>;
  /** Records that the lock is held at most until `until` (monotonic ms), as a try just reported. */
  heldUntil(until: number): void;
  leave(): void;
}

interface ParkedWaiter {
  /** Set for waiters woken by name only (fair locks): a message '@<id>' wakes just that one. */
  readonly id: string | undefined;
  readonly resume: (reason: WakeReason) => void;
}

interface ChannelState {
  refs: number;
  /** Waiters parked right now, in arrival order; a message wakes them from the front. */
  readonly parked: ParkedWaiter[];
  /**
   * Wake-ups that arrived while members were between two tries rather than parked. Kept so that a
   * release landing between "try failed" and "park" is not lost (the counted latch); capped at the
   * member count because more could never be used.
   */
  pending: number;
  /** Monotonic time by which the current holder's lease ends at the latest, as last reported. */
  heldUntil: number;
  /** Named wake-ups ('@id') that arrived while that waiter was between two tries. */
  readonly pendingById: Set<string>;
  subscribed: Promise<unknown>;
  lingerTimer?: NodeJS.Timeout;
}

/** How long an unused channel stays subscribed, so a hot key does not pay SUBSCRIBE on every wait. */
const LINGER_MS = 5_000;

/**
 * One subscriber connection per process, shared by every waiter, with channels reference-counted.
 *
 * Waiting is driven by Redis: a release publishes the number of waiters that can now win, and only
 * that many local waiters are woken. A holder that crashes publishes nothing, so every wait is also
 * bounded by the lock's remaining TTL (the caller passes it as `timeoutMs`): no fixed-interval polling.
 */
export class WakeSubscriber {
  private subscriber?: SubscriberConnection;
  private connected?: Promise<void>;
  private readonly channels = new Map<string, ChannelState>();
  private closed = false;
  /** Ends the wait of every `join` in progress (see `wakeAll`); replaced after each use. */
  private interruptJoins = deferredSignal();

  constructor(private readonly connection: WakeConnectionSource) {}

  /**
   * Joins a channel; resolves once Redis has confirmed the subscription, or after `maxWaitMs` with
   * the subscription still pending (a subscriber connection that hangs must not hold a caller past
   * its own deadline: its waits stay bounded by the holder's lease, and messages flow once the
   * subscription lands). With `waiterId`, only messages naming that id ('@id') wake this member;
   * without, any plain count message does.
   */
  async join(channel: string, waiterId?: string, maxWaitMs = Infinity): Promise<WakeChannel> {
    if (this.closed) throw new Error('WakeSubscriber is closed');
    let state = this.channels.get(channel);
    if (state) {
      clearTimeout(state.lingerTimer);
      state.lingerTimer = undefined;
      state.refs++;
    } else {
      state = { refs: 1, parked: [], pending: 0, heldUntil: 0, pendingById: new Set(), subscribed: Promise.resolve() };
      this.channels.set(channel, state);
      state.subscribed = this.subscribe(channel).catch((error) => {
        // Forget the failed subscription so the next waiter tries again instead of trusting it.
        if (this.channels.get(channel) === state) this.channels.delete(channel);
        throw error;
      });
    }
    try {
      const subscribed = Promise.race([state.subscribed, this.interruptJoins.promise]);
      await (Number.isFinite(maxWaitMs) ? settledWithin(subscribed, maxWaitMs) : subscribed);
    } catch (error) {
      state.refs--;
      throw error;
    }
    return this.membership(channel, state, waiterId);
  }

  /**
   * How long a newcomer should queue behind the waiters of this process already parked on
   * `channel` (local FIFO), or 0 when nobody is parked and it should try at once. Bounded by the
   * holder's known lease end, so a holder that crashed cannot strand the newcomer.
   */
  queueBehindFor(channel: string): number {
    const state = this.channels.get(channel);
    if (!state || state.parked.length === 0) return 0;
    return Math.max(0, state.heldUntil - performance.now());
  }

  /**
   * Wakes every parked waiter of every channel to try again now (the connection they try on became
   * unreachable: their next try fails fast instead of waiting out the holder's lease).
   */
  wakeAll(): void {
    for (const state of this.channels.values()) this.wakeEveryone(state);
    // Joins still waiting for their SUBSCRIBE go on too (with the subscription pending).
    this.interruptJoins.resolve();
    this.interruptJoins = deferredSignal();
  }

  /** Stops every wait at once (shutdown) and closes nothing: the connection is closed by `RedisConnection`. */
  close(): void {
    this.closed = true;
    for (const state of this.channels.values()) {
      clearTimeout(state.lingerTimer);
      for (const waiter of state.parked.splice(0)) waiter.resume('aborted');
    }
    this.channels.clear();
  }

  private membership(channel: string, state: ChannelState, waiterId: string | undefined): WakeChannel {
    let left = false;
    return {
      wait: (timeoutMs, signal, front) => this.park(state, timeoutMs, signal, waiterId, front),
      heldUntil: (until) => {
        state.heldUntil = until;
      },
      leave: () => {
        if (left) return;
        left = true;
        if (waiterId !== undefined) state.pendingById.delete(waiterId);
        state.refs--;
        state.pending = Math.min(state.pending, state.refs);
        if (state.refs === 0) this.scheduleUnsubscribe(channel, state);
      },
    };
  }

  private park(
    state: ChannelState,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    id: string | undefined,
    front = false,
  ): Promise<WakeReason> {
    if (id === undefined ? state.pending > 0 : state.pendingById.has(id)) {
      if (id === undefined) state.pending--;
      else state.pendingById.delete(id);
      return Promise.resolve('woken');
    }
    if (signal?.aborted) return Promise.resolve('aborted');
    if (this.closed) return Promise.resolve('aborted');
    return new Promise<WakeReason>((resolve) => {
      const finish = (reason: WakeReason) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = state.parked.indexOf(waiter);
        if (i >= 0) state.parked.splice(i, 1);
        resolve(reason);
      };
      const waiter: ParkedWaiter = { id, resume: finish };
      const onAbort = () => finish('aborted');
      // Whole milliseconds: Node keeps one timer list per distinct duration.
      const timer = setTimeout(() => finish('timeout'), timerDelay(Math.ceil(timeoutMs)));
      signal?.addEventListener('abort', onAbort, { once: true });
      if (front) state.parked.unshift(waiter);
      else state.parked.push(waiter);
    });
  }

  /** Wakes up to `count` anonymous waiters, oldest first; the rest is remembered for those not parked. */
  private wake(state: ChannelState, count: number): void {
    let left = count;
    for (const waiter of [...state.parked]) {
      if (left === 0) break;
      if (waiter.id !== undefined) continue;
      waiter.resume('woken');
      left--;
    }
    state.pending = Math.min(state.pending + left, state.refs);
  }

  private wakeById(state: ChannelState, id: string): void {
    const waiter = state.parked.find((w) => w.id === id);
    if (waiter) waiter.resume('woken');
    else if (state.pendingById.size < state.refs) state.pendingById.add(id);
  }

  /** After missed messages (reconnect): every waiter, named or not, should try again. */
  private wakeEveryone(state: ChannelState): void {
    for (const waiter of [...state.parked]) waiter.resume('woken');
    state.pending = state.refs;
  }

  private async subscribe(channel: string): Promise<void> {
    const subscriber = this.ensureSubscriber();
    // Connect before the first SUBSCRIBE: a lazy client that connects *because of* a SUBSCRIBE
    // runs its ready check (INFO) in subscriber mode, which Redis refuses.
    this.connected ??= subscriber.connect();
    try {
      await this.connected;
    } catch (error) {
      this.connected = undefined;
      throw error;
    }
    await subscriber.subscribe(channel);
  }

  private scheduleUnsubscribe(channel: string, state: ChannelState): void {
    state.lingerTimer = setTimeout(() => {
      if (state.refs > 0 || this.channels.get(channel) !== state) return;
      this.channels.delete(channel);
      const subscriber = this.subscriber;
      if (!subscriber?.ready) return;
      const done = subscriber.unsubscribe(channel);
      // Losing an UNSUBSCRIBE only leaves an idle channel; never surface it as an unhandled rejection.
      done.catch(() => undefined);
    }, LINGER_MS);
    state.lingerTimer.unref();
  }

  private ensureSubscriber(): SubscriberConnection {
    if (this.subscriber) return this.subscriber;
    const subscriber = this.connection.openSubscriber('subscriber');
    const onMessage = (channel: string, message: string) => {
      const state = this.channels.get(channel);
      if (!state) return;
      if (message.startsWith('@')) return this.wakeById(state, message.slice(1));
      const count = Number.parseInt(message, 10);
      this.wake(state, Number.isFinite(count) && count > 0 ? count : 1);
    };
    subscriber.onMessage(onMessage);
    // Messages published while the connection was down are gone; let every waiter try again.
    // (ioredis re-subscribes to every channel by itself when it reconnects.)
    let readyBefore = false;
    subscriber.onReady(() => {
      if (readyBefore) for (const state of this.channels.values()) this.wakeEveryone(state);
      readyBefore = true;
    });
    this.subscriber = subscriber;
    return subscriber;
  }
}

/** A promise resolved on demand. */
function deferredSignal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Settles like `promise`, or resolves after `ms` if it has not settled by then. */
function settledWithin(promise: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timerDelay(Math.ceil(ms)));
  });
  return Promise.race([promise, elapsed]).finally(() => clearTimeout(timer));
}
