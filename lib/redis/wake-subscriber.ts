import type { RedisClient } from '../options/redis-lock-config';
import type { RedisConnection } from './redis-connection';

/** Why a parked waiter resumed. */
export type WakeReason = 'woken' | 'timeout' | 'aborted';

/** A waiter's membership in one wake channel; `leave()` exactly once when done waiting. */
export interface WakeChannel {
  /** Parks until a release message, `timeoutMs`, or `signal`, whichever comes first. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<WakeReason>;
  leave(): void;
}

interface ChannelState {
  refs: number;
  /** Waiters parked right now, in arrival order; a message wakes them from the front. */
  readonly parked: Array<(reason: WakeReason) => void>;
  /**
   * Wake-ups that arrived while members were between two tries rather than parked. Kept so that a
   * release landing between "try failed" and "park" is not lost (the counted latch); capped at the
   * member count because more could never be used.
   */
  pending: number;
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
  private subscriber?: RedisClient;
  private readonly channels = new Map<string, ChannelState>();
  private closed = false;

  constructor(private readonly connection: RedisConnection) {}

  /** Joins a channel; resolves once Redis has confirmed the subscription. */
  async join(channel: string): Promise<WakeChannel> {
    if (this.closed) throw new Error('WakeSubscriber is closed');
    let state = this.channels.get(channel);
    if (state) {
      clearTimeout(state.lingerTimer);
      state.lingerTimer = undefined;
      state.refs++;
    } else {
      state = { refs: 1, parked: [], pending: 0, subscribed: Promise.resolve() };
      this.channels.set(channel, state);
      state.subscribed = this.subscribe(channel).catch((error) => {
        // Forget the failed subscription so the next waiter tries again instead of trusting it.
        if (this.channels.get(channel) === state) this.channels.delete(channel);
        throw error;
      });
    }
    try {
      await state.subscribed;
    } catch (error) {
      state.refs--;
      throw error;
    }
    return this.membership(channel, state);
  }

  /** Stops every wait at once (shutdown) and closes nothing: the connection is closed by `RedisConnection`. */
  close(): void {
    this.closed = true;
    for (const state of this.channels.values()) {
      clearTimeout(state.lingerTimer);
      for (const resume of state.parked.splice(0)) resume('aborted');
    }
    this.channels.clear();
  }

  private membership(channel: string, state: ChannelState): WakeChannel {
    let left = false;
    return {
      wait: (timeoutMs, signal) => this.park(state, timeoutMs, signal),
      leave: () => {
        if (left) return;
        left = true;
        state.refs--;
        state.pending = Math.min(state.pending, state.refs);
        if (state.refs === 0) this.scheduleUnsubscribe(channel, state);
      },
    };
  }

  private park(state: ChannelState, timeoutMs: number, signal?: AbortSignal): Promise<WakeReason> {
    if (state.pending > 0) {
      state.pending--;
      return Promise.resolve('woken');
    }
    if (signal?.aborted) return Promise.resolve('aborted');
    if (this.closed) return Promise.resolve('aborted');
    return new Promise<WakeReason>((resolve) => {
      const finish = (reason: WakeReason) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = state.parked.indexOf(finish);
        if (i >= 0) state.parked.splice(i, 1);
        resolve(reason);
      };
      const onAbort = () => finish('aborted');
      const timer = setTimeout(() => finish('timeout'), Math.max(0, timeoutMs));
      signal?.addEventListener('abort', onAbort, { once: true });
      state.parked.push(finish);
    });
  }

  private wake(state: ChannelState, count: number): void {
    let left = count;
    while (left > 0 && state.parked.length > 0) {
      state.parked[0]('woken');
      left--;
    }
    state.pending = Math.min(state.pending + left, state.refs);
  }

  private async subscribe(channel: string): Promise<void> {
    const subscriber = this.ensureSubscriber();
    if (this.connection.isCluster) await (subscriber as RedisClient & { ssubscribe(c: string): Promise<unknown> }).ssubscribe(channel);
    else await subscriber.subscribe(channel);
  }

  private scheduleUnsubscribe(channel: string, state: ChannelState): void {
    state.lingerTimer = setTimeout(() => {
      if (state.refs > 0 || this.channels.get(channel) !== state) return;
      this.channels.delete(channel);
      const subscriber = this.subscriber;
      if (!subscriber || subscriber.status !== 'ready') return;
      const done = this.connection.isCluster
        ? (subscriber as RedisClient & { sunsubscribe(c: string): Promise<unknown> }).sunsubscribe(channel)
        : subscriber.unsubscribe(channel);
      // Losing an UNSUBSCRIBE only leaves an idle channel; never surface it as an unhandled rejection.
      done.catch(() => undefined);
    }, LINGER_MS);
    state.lingerTimer.unref();
  }

  private ensureSubscriber(): RedisClient {
    if (this.subscriber) return this.subscriber;
    const subscriber = this.connection.duplicate('subscriber');
    const onMessage = (channel: string, message: string) => {
      const state = this.channels.get(channel);
      if (!state) return;
      const count = Number.parseInt(message, 10);
      this.wake(state, Number.isFinite(count) && count > 0 ? count : 1);
    };
    subscriber.on('message', onMessage);
    subscriber.on('smessage', onMessage);
    // Messages published while the connection was down are gone; let every waiter try again.
    // (ioredis re-subscribes to every channel by itself when it reconnects.)
    let readyBefore = false;
    subscriber.on('ready', () => {
      if (readyBefore) for (const state of this.channels.values()) this.wake(state, state.refs);
      readyBefore = true;
    });
    this.subscriber = subscriber;
    return subscriber;
  }
}
