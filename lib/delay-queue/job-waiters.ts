import { Injectable } from '@nestjs/common';
import type { TopicKeys } from '../core/keys/redis-key-space.js';
import { DelayQueueClosedError } from '../core/errors/delay-queue-closed.error.js';
import { JobCancelledError } from '../core/errors/job-cancelled.error.js';
import { JobDeadError } from '../core/errors/job-dead.error.js';
import { JobNotFoundError } from '../core/errors/job-not-found.error.js';
import { JobWaitTimeoutError } from '../core/errors/job-wait-timeout.error.js';
import { RedisConnectionError } from '../core/errors/redis-connection.error.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import type { SubscriberConnection } from '../core/redis/redis-transport.js';
import { decodeFailure, decodeJobLeniently } from './jobs/job-codec.js';
import { parseOutcomeNotice, type OutcomeNotice } from './jobs/outcome-notice.js';
import { TopicShards } from './jobs/topic-shards.js';
import type { JobRead } from './scripts/read-job-lua-snippet.js';
import { watchJobScript } from './scripts/watch-job.lua.js';
import { settleWithin } from '../core/time/settle-within.js';

/** How long the first subscription may take when the connection has no bound of its own (a cluster), in ms. */
const SUBSCRIBE_BOUND_MS = 2_000;
/**
 * How long shutdown waits for the outcomes already published to reach their waiters, in ms: what is
 * left of the module's shutdown budget, within these bounds (a round trip to a healthy Redis is far less).
 */
const HEAR_PUBLISHED_MIN_MS = 100;
const HEAR_PUBLISHED_MAX_MS = 1_000;

/** One `waitFor()` call until it settles. */
interface Waiter {
  readonly topic: string;
  readonly id: string;
  /** The shards that may hold the job, in search order (one for a topic that is not sharded). */
  readonly shards: readonly TopicKeys[];
  settled: boolean;
  /** Set once its first read answered (a job not finished leaves it waiting). */
  begun: boolean;
  /** The timeout, when it passed before the first read answered: that read settles the wait or it ends then. */
  overdue?: JobWaitTimeoutError;
  timer?: NodeJS.Timeout;
  /** The next read after a reconnect whose read failed (see `reread`). */
  rereadTimer?: NodeJS.Timeout;
  resolve(result: unknown): void;
  reject(error: Error): void;
}

/** A subscribed outcome channel: its waiters by job id, and whether Redis confirmed the subscription. */
interface Channel {
  readonly waiters: Map<string, Set<Waiter>>;
  subscribed?: Promise<void>;
}

/**
 * The waiters of `DelayQueueService.waitFor()` in this process: one subscriber connection, opened at
 * the first wait, and one outcome channel per topic shard waited on (SSUBSCRIBE on a cluster),
 * reference-counted by its waiters; no polling. A waiter subscribes, then reads the job and records
 * that it is waited for in one script (watch-job.lua.ts), so an outcome is either in that read or
 * announced on a channel it hears. A notice published while the connection is down is lost: after
 * each reconnect every waiter's job is read again. Nothing here throws into the void.
 */
@Injectable()
export class JobWaiters {
  private subscriber?: SubscriberConnection;
  private connected?: Promise<void>;
  private readonly channels = new Map<string, Channel>();
  /** The `begin()` of each wait whose subscription or first read is in flight. */
  private readonly beginning = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly connection: RedisConnection,
    private readonly shards: TopicShards,
  ) {}

  /** How many `waitFor()` calls are pending (for tests and benches). */
  get pending(): number {
    const waiters = new Set<Waiter>();
    for (const channel of this.channels.values()) for (const set of channel.waiters.values()) for (const w of set) waiters.add(w);
    return waiters.size;
  }

  /** See `DelayQueueService.waitFor`. */
  wait(topic: string, id: string, timeout: number | undefined): Promise<unknown> {
    if (this.closed) return Promise.reject(new DelayQueueClosedError('wait for a job'));
    return new Promise<unknown>((resolve, reject) => {
      const waiter: Waiter = {
        topic,
        id,
        shards: this.shards.searchOrder(topic, id),
        settled: false,
        begun: false,
        resolve: (result) => this.settle(waiter, () => resolve(result)),
        reject: (error) => this.settle(waiter, () => reject(error)),
      };
      if (timeout !== undefined)
        waiter.timer = setTimeout(() => this.timeOut(waiter, new JobWaitTimeoutError(topic, id, timeout)), timeout);
      for (const shard of waiter.shards) this.join(shard.outcomeChannel, waiter);
      const beginning = this.begin(waiter).finally(() => this.beginning.delete(beginning));
      this.beginning.add(beginning);
    });
  }

  /**
   * Lets the outcomes published before this call reach their waiters, and the first reads in flight
   * answer (shutdown, after the consumers drained: the jobs they finished settle their waiters here).
   * On each channel with waiters it subscribes again: Redis sends that confirmation after the notices
   * it already queued for the connection, which are heard first. Within what is left of the shutdown
   * budget, at least 100 ms and at most 1 s; at once when nobody waits, or Redis is down or unreachable
   * (silent past its bound), or the subscriber is not connected (a notice is lost then anyway). Never rejects.
   */
  async hearPublished(): Promise<void> {
    const reachability = this.connection.reachability;
    if (this.closed || this.pending === 0 || reachability?.isUnreachable || reachability?.isDown) return;
    const subscriber = this.subscriber;
    const confirmations = subscriber?.ready ? [...this.channels.keys()].map((name) => subscriber.subscribe(name)) : [];
    const bound = Math.min(HEAR_PUBLISHED_MAX_MS, Math.max(HEAR_PUBLISHED_MIN_MS, this.connection.shutdownBudgetLeft()));
    await settleWithin(Promise.allSettled([...confirmations, ...this.beginning]), bound);
  }

  /** Rejects every pending waiter (shutdown) and closes the subscriber connection. */
  close(): void {
    this.closed = true;
    const error = new DelayQueueClosedError('wait for a job');
    for (const channel of [...this.channels.values()]) {
      for (const set of [...channel.waiters.values()]) for (const waiter of [...set]) waiter.reject(error);
    }
    this.channels.clear();
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    if (subscriber) void subscriber.close().catch(() => undefined);
  }

  /** Subscribes the waiter's channels (bounded), then reads its job; a failure of either rejects it. */
  private async begin(waiter: Waiter): Promise<void> {
    try {
      await this.bounded(Promise.all(waiter.shards.map((shard) => this.subscribed(shard.outcomeChannel))), waiter);
      if (waiter.settled) return;
      this.answer(waiter, await this.read(waiter));
      waiter.begun = true;
      if (waiter.overdue) waiter.reject(waiter.overdue);
    } catch (error) {
      waiter.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /**
   * The timeout ends a wait once its first read answered: a job already finished answers from its
   * stored state whatever the timeout, 0 included. With Redis down there is nothing to read: it ends now.
   */
  private timeOut(waiter: Waiter, error: JobWaitTimeoutError): void {
    if (waiter.begun || this.connection.reachability?.isDown) waiter.reject(error);
    else waiter.overdue = error;
  }

  /** The job's state, from the first shard that holds it, recording there that it is waited for. */
  private async read(waiter: Waiter): Promise<JobRead> {
    let read: JobRead | undefined;
    for (const shard of waiter.shards) {
      read = await watchJobScript.call(this.connection, shard, { id: waiter.id, publishCommand: this.connection.publishCommand });
      if (read.body !== null) break;
    }
    return read!;
  }

  /** Settles the waiter from a read of its job, or leaves it waiting when the job has not finished. */
  private answer(waiter: Waiter, read: JobRead): void {
    const { topic, id } = waiter;
    if (read.finishedAtMs !== null) waiter.resolve(read.resultJson === null ? undefined : (JSON.parse(read.resultJson) as unknown));
    else if (read.diedAtMs !== null) {
      const job = decodeJobLeniently(read.body!);
      waiter.reject(new JobDeadError(topic, id, job.lastError, job.lastErrorStack));
    } else if (read.body === null) {
      // After a reconnect, a job gone is one whose outcome was announced while the notice could not
      // be heard (completed without keepCompleted, or cancelled): which of them is not known.
      waiter.reject(new JobNotFoundError(topic, id));
    }
  }

  private hear(channelName: string, notice: OutcomeNotice): void {
    const waiters = this.channels.get(channelName)?.waiters.get(notice.id);
    if (!waiters) return;
    for (const waiter of [...waiters]) {
      if (notice.kind === 'completed') waiter.resolve(notice.detail === '' ? undefined : parseResult(notice.detail));
      else if (notice.kind === 'dead') {
        const { lastError, lastErrorStack } = decodeFailure(notice.detail);
        waiter.reject(new JobDeadError(waiter.topic, waiter.id, lastError, lastErrorStack));
      } else waiter.reject(new JobCancelledError(waiter.topic, waiter.id, true));
    }
  }

  private settle(waiter: Waiter, done: () => void): void {
    if (waiter.settled) return;
    waiter.settled = true;
    clearTimeout(waiter.timer);
    clearTimeout(waiter.rereadTimer);
    for (const shard of waiter.shards) this.leave(shard.outcomeChannel, waiter);
    done();
  }

  /** Adds the waiter to the channel's entry, created with its first waiter (subscribed by `subscribed`). */
  private join(name: string, waiter: Waiter): void {
    let channel = this.channels.get(name);
    if (!channel) this.channels.set(name, (channel = { waiters: new Map() }));
    let set = channel.waiters.get(waiter.id);
    if (!set) channel.waiters.set(waiter.id, (set = new Set()));
    set.add(waiter);
  }

  private leave(name: string, waiter: Waiter): void {
    const channel = this.channels.get(name);
    const set = channel?.waiters.get(waiter.id);
    if (!channel || !set) return;
    set.delete(waiter);
    if (set.size === 0) channel.waiters.delete(waiter.id);
    if (channel.waiters.size > 0) return;
    this.channels.delete(name);
    const subscriber = this.subscriber;
    // Losing an UNSUBSCRIBE only leaves an idle channel.
    if (subscriber?.ready) subscriber.unsubscribe(name).catch(() => undefined);
  }

  /** Resolves once Redis confirmed the channel's subscription (shared by all its waiters). */
  private subscribed(name: string): Promise<void> {
    const channel = this.channels.get(name);
    if (!channel) return Promise.resolve(); // its waiters all settled meanwhile
    channel.subscribed ??= this.subscribe(name).catch((error: unknown) => {
      channel.subscribed = undefined; // the next waiter, or the next reconnect, tries again
      throw error;
    });
    return channel.subscribed;
  }

  private async subscribe(name: string): Promise<void> {
    const subscriber = this.ensureSubscriber();
    // Connect before the first SUBSCRIBE: a lazy client connecting because of it would run its
    // ready check (INFO) in subscriber mode, which Redis refuses.
    this.connected ??= subscriber.connect().catch((error: unknown) => {
      this.connected = undefined;
      throw error;
    });
    await this.connected;
    await subscriber.subscribe(name);
    // Every waiter of the channel settled while it was being subscribed: leave no idle channel.
    if (!this.channels.has(name) && subscriber.ready) subscriber.unsubscribe(name).catch(() => undefined);
  }

  /** `subscribing`, or a RedisConnectionError when Redis did not confirm it within the connection's bound. */
  private bounded(subscribing: Promise<unknown>, waiter: Waiter): Promise<unknown> {
    const reachability = this.connection.reachability;
    const action = `wait for job ${JSON.stringify(waiter.id)} of topic ${JSON.stringify(waiter.topic)}`;
    // Unreachable past its bound already: calls fail at once, as every other call of the module.
    if (reachability?.isUnreachable) {
      subscribing.catch(() => undefined);
      return Promise.reject(reachability.failure(action));
    }
    const bound = reachability ? reachability.waitBound : SUBSCRIBE_BOUND_MS;
    if (bound === undefined) return subscribing;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            reachability?.isDown
              ? reachability.failure(action)
              : new RedisConnectionError(
                  `Redis did not confirm the subscription to job outcomes within ${bound} ms while trying to ${action}. ` +
                    'Check that Redis is up and reachable, then retry.',
                ),
          ),
        bound,
      );
    });
    subscribing.catch(() => undefined);
    return Promise.race([subscribing, late]).finally(() => clearTimeout(timer));
  }

  private ensureSubscriber(): SubscriberConnection {
    if (this.subscriber) return this.subscriber;
    const subscriber = this.connection.openSubscriber('job outcomes');
    subscriber.onMessage((channel, message) => {
      const notice = parseOutcomeNotice(message);
      if (notice) this.hear(channel, notice);
    });
    let readyBefore = false;
    subscriber.onReady(() => {
      if (this.closed || this.subscriber !== subscriber) return;
      // After a reconnect, notices published while the connection was down are lost: subscribe
      // every channel again (beside ioredis' own resubscription, harmlessly) and, once confirmed,
      // read each waiter's job again, until a read answers (see reread).
      if (readyBefore) for (const name of this.channels.keys()) void this.recheck(name);
      readyBefore = true;
    });
    this.subscriber = subscriber;
    return subscriber;
  }

  private async recheck(name: string): Promise<void> {
    const channel = this.channels.get(name);
    if (!channel) return;
    try {
      channel.subscribed = this.subscribe(name);
      await channel.subscribed;
    } catch {
      channel.subscribed = undefined;
      return;
    }
    const waiters = new Set<Waiter>();
    for (const set of channel.waiters.values()) for (const waiter of set) waiters.add(waiter);
    await Promise.all([...waiters].map((waiter) => this.reread(waiter)));
  }

  /**
   * Reads a waiter's job after a reconnect. The notice of an outcome published while the subscriber
   * was down is lost, and the command connection may come back later than the subscriber: a read that
   * fails is tried again (100 ms, doubling to 1 s) until one answers or the waiter settles (its
   * outcome heard, its timeout, shutdown). Never rejects.
   */
  private async reread(waiter: Waiter, failures = 0): Promise<void> {
    try {
      const read = await this.read(waiter);
      if (!waiter.settled) this.answer(waiter, read);
    } catch {
      if (waiter.settled || this.closed) return;
      clearTimeout(waiter.rereadTimer);
      waiter.rereadTimer = setTimeout(() => void this.reread(waiter, failures + 1), Math.min(1_000, 100 * 2 ** failures));
    }
  }
}

/** A kept result's JSON as the handler's value (a notice cut short would not parse: undefined then). */
function parseResult(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}
