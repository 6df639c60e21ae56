import type { Logger } from '@nestjs/common';
import { ConsumerShutdownTimeoutError } from '../errors/consumer-shutdown-timeout.error.js';
import { JobVisibilityLostError } from '../errors/job-visibility-lost.error.js';
import type { TopicKeys } from '../keys/redis-key-space.js';
import type { RedisLockConfig } from '../options/redis-lock-config.js';
import type { RedisLockEvents } from '../lock/lock-events.js';
import type { RedisLockTracing } from '../observability/tracing/redis-lock-tracing.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import type { ResolvedConsumerOptions } from './consumer-options.js';
import { MAX_CLAIM_BATCH, MAX_ERROR_MESSAGE_LENGTH } from './delay-queue.constants.js';
import type { Consumer } from './interfaces/consumer.interface.js';
import type { DelayedJobHandler, JobContext } from './interfaces/job-context.interface.js';
import { decodeJob, type DecodedJob } from './job-codec.js';
import { MarkerWaiter, type MarkerOutcome } from './marker-waiter.js';
import { newOperationId, operationKey } from './operation-record.js';
import { backoffDelay } from './schedule-options.js';
import { ackJobsScript } from './scripts/ack-jobs.lua.js';
import { claimDueJobsScript } from './scripts/claim-due-jobs.lua.js';
import { extendJobsScript } from './scripts/extend-jobs.lua.js';
import { failJobScript } from './scripts/fail-job.lua.js';
import { releaseJobsScript } from './scripts/release-jobs.lua.js';
import { settleWithin } from './settle-within.js';

/** A job this consumer has claimed and not yet settled with Redis. */
interface HeldJob {
  readonly id: string;
  readonly token: string;
  readonly dueMs: number;
  /** Created on first use: most handlers never look at their signal, and a controller per job shows up in bursts. */
  controller?: AbortController;
  /** The stored job as claimed; dropped once the handler starts. */
  body?: string;
  /** `performance.now()` until which Redis is known to keep the claim (claim or last confirmed extension). */
  confirmedUntil: number;
  /** buffered: claimed, waiting for a free slot; running: handler in progress; settling: ack or failure being recorded. */
  phase: 'buffered' | 'running' | 'settling';
  /** The claim is gone (visibility lost, or handed back at shutdown): nothing more is sent for it. */
  abandoned: boolean;
  /** Settles once the handler has returned and its outcome is queued or recorded. Never rejects. */
  done?: Promise<void>;
}

interface ClaimedRow {
  readonly id: string;
  readonly body: string;
  readonly dueMs: number;
  /** When the claim was sent: the server's visibility deadline is at least `visibilityTimeout` after it. */
  readonly sentAt: number;
}

interface ClaimResult {
  readonly rows: ClaimedRow[];
  /** Server ms of the next due time or visibility deadline; -1 when the topic is empty. */
  readonly nextWake: number;
  readonly moreDue: boolean;
}

type PauseReason = 'slot' | 'work' | 'retry';

/** The dead letter's error when a job's last attempt never came back (kept equal to the claim script's text). */
const VISIBILITY_EXPIRED_ON_LAST_ATTEMPT =
  'Visibility timeout passed without an acknowledgement on the last attempt (the consumer crashed, stalled or lost Redis)';

/**
 * A claim counts as lost a margin before its last confirmed visibility runs out: another consumer
 * may take the job over the moment Redis's deadline passes, and the handler's signal must abort
 * first. The margin covers a late timer: 10 ms was enough on an idle machine, not on a loaded one
 * (the takeover came first once in a full test run with a CPU hog beside it), so it is 5 % of the
 * visibility timeout, between 10 ms and 1 s (1 s for the default 30 s).
 */
function visibilityLossMargin(visibilityTimeout: number): number {
  return Math.min(1_000, Math.max(10, Math.round(visibilityTimeout * 0.05)));
}

/**
 * Once the shutdown timeout has run out, how long each remaining shutdown step (handing jobs back,
 * flushing acknowledgements) may still wait for Redis. Bounds `close()` when Redis is unreachable.
 */
const SHUTDOWN_REDIS_GRACE_MS = 1_000;

/** Everything a consumer needs from the service that created it. */
export interface ConsumerContext {
  readonly connection: RedisConnection;
  readonly keys: TopicKeys;
  readonly retention: RedisLockConfig['delayQueue']['retention'];
  readonly logger: Logger;
  /** Where job life-cycle events go (absent: none are emitted). */
  readonly events?: RedisLockEvents;
  /** Spans around handler runs; absent means none. */
  readonly tracing?: RedisLockTracing;
  readonly onClosed: (consumer: Consumer) => void;
}

/**
 * Runs one topic's jobs in this process.
 *
 * The loop: claim as many due jobs as there is room for (free slots plus a prefetch buffer of
 * `concurrency` more; one script, which also carries pending acknowledgements and recovers expired
 * in-flight jobs), start handlers as slots free up, then wait for the next reason to claim: room,
 * the next due time, or a marker pushed by a producer. A backlog is thus drained in batches of up to
 * twice the concurrency per round trip; buffered jobs never started are handed back at shutdown. Due times are met
 * by a local timer set from the Redis clock (offset measured on every claim), not by Redis's blocking
 * timeout, which only fires on the server's 100 ms cron tick. The BZPOPMIN on the marker only brings
 * news (an earlier job, a burst to share); it times out every `maxIdleWait` as a safety net.
 *
 * Nothing here throws into the void: every Redis failure is caught, logged, and retried with backoff.
 */
export class DelayQueueConsumer<T = unknown> implements Consumer {
  private state: 'running' | 'draining' | 'closed' = 'running';
  private readonly held = new Map<string, HeldJob>();
  /** Claimed ahead of a free slot (at most `concurrency`), so handlers keep running while the next claim travels. */
  private readonly buffer: HeldJob[] = [];
  private runningCount = 0;
  private readonly pendingAcks: HeldJob[] = [];
  private readonly settling = new Set<Promise<unknown>>();
  private readonly waiter: MarkerWaiter;
  private readonly keyList: string[];
  private readonly loopDone: Promise<void>;
  private closing?: Promise<void>;
  private resume?: () => void;
  private pausedFor?: PauseReason;
  private wakePending = false;
  private clockOffset = 0;
  private extendTimer?: NodeJS.Timeout;
  /** Fires when the earliest held claim runs out of confirmed visibility (see `armVisibilityTimer`). */
  private visibilityTimer?: NodeJS.Timeout;
  private extending = false;
  private ackFlushScheduled = false;
  private failures = 0;
  private lastFailureLog = -Infinity;
  /** Names this consumer's claim records: `<id>:<sequence>` is unique per claim call (see claim-due-jobs.lua.ts). */
  private readonly claimerId = newOperationId();
  private claimSequence = 0;
  /** The record of the last claim that took jobs: its reply has arrived, so the next claim deletes it. */
  private lastClaimRecord?: string;

  /** How long before its confirmed visibility ends a claim counts as lost (see `visibilityLossMargin`). */
  private readonly lossMargin: number;

  constructor(
    readonly topic: string,
    private readonly handler: DelayedJobHandler<T>,
    readonly options: ResolvedConsumerOptions,
    private readonly context: ConsumerContext,
  ) {
    const { keys } = context;
    this.keyList = [keys.due, keys.jobs, keys.active, keys.dead, keys.marker];
    this.lossMargin = visibilityLossMargin(options.visibilityTimeout);
    this.waiter = new MarkerWaiter(
      context.connection,
      keys.marker,
      `delay-queue consumer ${topic}`,
      options.maxIdleWait,
      (outcome) => this.onMarker(outcome),
      (error) => this.failed(error),
    );
    this.loopDone = this.run().catch((error) => this.bug('claim loop', error));
  }

  get running(): boolean {
    return this.state === 'running';
  }

  get activeCount(): number {
    return this.runningCount;
  }

  /** Blocking connections opened so far (a hung or closed one is replaced). For diagnostics. */
  get blockingConnectionsOpened(): number {
    return this.waiter.connectionsOpened;
  }

  close(options?: { timeout?: number }): Promise<void> {
    const timeout = options?.timeout ?? this.options.shutdownTimeout;
    return (this.closing ??= this.drain(timeout));
  }

  // ---- the claim loop ----------------------------------------------------------------------

  private async run(): Promise<void> {
    while (this.state === 'running') {
      try {
        const room = Math.min(MAX_CLAIM_BATCH, 2 * this.options.concurrency - this.runningCount - this.buffer.length);
        if (room <= 0) {
          await this.pause('slot');
          continue;
        }
        const claim = await this.claim(room);
        this.recovered();
        const claimed = claim.rows.map((row) => this.hold(row));
        if (this.state !== 'running') {
          await this.handBack(claimed, true);
          break;
        }
        this.buffer.push(...claimed);
        this.startBuffered();
        if (claim.rows.length >= room || claim.moreDue) continue;
        if (this.wakePending) continue;
        await this.pause('work', claim.nextWake);
      } catch (error) {
        this.failed(error);
        await this.pause('retry', -1, this.retryDelay());
      }
    }
  }

  private async claim(max: number): Promise<ClaimResult> {
    this.wakePending = false;
    const acks = this.pendingAcks.splice(0);
    const { visibilityTimeout, maxAttempts } = this.options;
    const { deadLetterMaxCount, deadLetterMaxAge } = this.context.retention;
    const args: (string | number)[] = [max, visibilityTimeout, maxAttempts, deadLetterMaxCount, deadLetterMaxAge];
    for (const job of acks) args.push(job.id, job.token);
    // One record per call: if ioredis re-sends this claim after a lost reply, the second run returns this batch.
    const record = operationKey(this.context.keys.jobs, `claim:${this.claimerId}:${++this.claimSequence}`);
    const keys = [...this.keyList, record];
    if (this.lastClaimRecord) keys.push(this.lastClaimRecord);
    const sent = performance.now();
    let reply: [number, number, number, number, (string | number)[], (string | number)[]];
    try {
      reply = await claimDueJobsScript.run(this.context.connection.client, keys, args);
    } catch (error) {
      this.pendingAcks.unshift(...acks);
      throw error;
    }
    const received = performance.now();
    for (const job of acks) this.forget(job);
    const [nowUs, nextWake, more, , flat, recovered] = reply;
    this.lastClaimRecord = flat.length > 0 ? record : undefined;
    if (recovered.length > 0) this.reportRecovered(recovered);
    // The script's TIME was taken between send and receive; the midpoint bounds the error by half a round trip.
    this.clockOffset = Number(nowUs) / 1000 - (sent + received) / 2;
    const rows: ClaimedRow[] = [];
    for (let i = 0; i < flat.length; i += 3) {
      rows.push({ id: String(flat[i]), body: String(flat[i + 1]), dueMs: Number(flat[i + 2]), sentAt: sent });
    }
    return { rows, nextWake: Number(nextWake), moreDue: Number(more) === 1 };
  }

  /** `recovered`: the claim script's flat { id, attempts, maxAttempts, requeued (1|0) } rows. */
  private reportRecovered(recovered: (string | number)[]): void {
    const events = this.context.events;
    if (!events || !(events.wants('job.recovered') || events.wants('job.dead'))) return;
    for (let i = 0; i < recovered.length; i += 4) {
      const base = {
        topic: this.topic,
        id: String(recovered[i]),
        attempt: Number(recovered[i + 1]),
        maxAttempts: Number(recovered[i + 2]),
      };
      const requeued = Number(recovered[i + 3]) === 1;
      events.emit('job.recovered', { ...base, requeued });
      if (!requeued) events.emit('job.dead', { ...base, error: VISIBILITY_EXPIRED_ON_LAST_ATTEMPT });
    }
  }

  /** Resolves on the next reason to look at the queue again (see the class comment). */
  private pause(reason: PauseReason, nextWake = -1, sleepMs = 0): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        if (this.resume === done) {
          this.resume = undefined;
          this.pausedFor = undefined;
        }
        resolve();
      };
      if (this.state !== 'running') return resolve();
      this.resume = done;
      this.pausedFor = reason;
      if (reason === 'retry') {
        timer = setTimeout(done, sleepMs);
      } else if (reason === 'work') {
        const delay = nextWake >= 0 ? nextWake - this.serverNow() : Infinity;
        if (delay <= 0) return done();
        if (delay < this.options.maxIdleWait) timer = setTimeout(done, Math.max(1, Math.ceil(delay)));
        this.waiter.ensureWaiting();
      }
      timer?.unref();
    });
  }

  private wakeLoop(): void {
    this.resume?.();
  }

  private onMarker(outcome: MarkerOutcome): void {
    if (this.pausedFor === 'work') return this.wakeLoop();
    if (outcome !== 'popped') return;
    if (this.pausedFor === 'slot') {
      // We cannot take more work: hand the wake-up to another consumer instead of swallowing it.
      this.context.connection.client.zadd(this.context.keys.marker, 0, 'wake').catch(() => undefined);
    } else {
      this.wakePending = true;
    }
  }

  private serverNow(): number {
    return performance.now() + this.clockOffset;
  }

  // ---- running handlers ----------------------------------------------------------------------

  private hold(row: ClaimedRow): HeldJob {
    const token = /^\{"g":(\d+),/.exec(row.body)?.[1] ?? '';
    const job: HeldJob = {
      id: row.id,
      token,
      dueMs: row.dueMs,
      body: row.body,
      confirmedUntil: row.sentAt + this.options.visibilityTimeout,
      phase: 'buffered',
      abandoned: false,
    };
    this.held.set(heldKey(job), job);
    this.ensureExtender();
    // A new claim never runs out before one already watched; only arm when nothing is.
    if (!this.visibilityTimer) this.armVisibilityTimer();
    return job;
  }

  /** Starts buffered jobs while there are free slots. */
  private startBuffered(): void {
    while (this.runningCount < this.options.concurrency && this.buffer.length > 0) {
      const job = this.buffer.shift()!;
      if (job.abandoned) {
        this.forget(job);
        continue;
      }
      const body = job.body!;
      job.body = undefined;
      job.phase = 'running';
      this.runningCount++;
      job.done = this.execute(job, body).catch((error) => this.bug('job completion', error));
    }
  }

  private async execute(job: HeldJob, body: string): Promise<void> {
    let decoded: DecodedJob<T> | undefined;
    let failure: unknown;
    let succeeded = false;
    const events = this.context.events;
    let startedAt = 0;
    try {
      decoded = decodeJob<T>(body);
      if (events && (events.wants('job.started') || events.wants('job.succeeded') || events.wants('job.failed'))) {
        startedAt = performance.now();
        if (events.wants('job.started')) {
          const latenessMs = Math.max(0, this.serverNow() - job.dueMs);
          events.emit('job.started', { topic: this.topic, id: job.id, attempt: decoded.attempts, latenessMs });
        }
      }
      const context: JobContext = Object.freeze({
        id: job.id,
        topic: this.topic,
        attempt: decoded.attempts,
        maxAttempts: decoded.maxAttempts ?? this.options.maxAttempts,
        scheduledAt: new Date(job.dueMs),
        createdAt: new Date(decoded.createdAt),
        get signal() {
          return controllerOf(job).signal;
        },
      });
      const tracing = this.context.tracing;
      if (tracing?.enabled) {
        const payload = decoded.payload;
        const info = { topic: this.topic, id: job.id, attempt: decoded.attempts, traceparent: decoded.traceparent };
        await tracing.traceHandler(info, async () => this.handler(payload, context));
      } else {
        await this.handler(decoded.payload, context);
      }
      succeeded = true;
    } catch (error) {
      failure = error;
    }
    this.runningCount--;
    if (startedAt > 0 && decoded) {
      const runMs = performance.now() - startedAt;
      const base = { topic: this.topic, id: job.id, attempt: decoded.attempts, runMs };
      if (succeeded) events!.emit('job.succeeded', base);
      else events!.emit('job.failed', { ...base, error: failure });
    }
    if (job.abandoned) {
      this.forget(job);
    } else {
      job.phase = 'settling';
      if (succeeded) this.queueAck(job);
      else this.track(this.recordFailure(job, decoded, failure));
    }
    this.slotFreed();
  }

  private slotFreed(): void {
    if (this.state === 'running') this.startBuffered();
    if (this.pausedFor !== 'slot') return;
    // Coalesce: handlers finishing in the same turn are acknowledged and replaced by one claim.
    const resume = this.resume;
    setImmediate(() => {
      if (this.resume === resume) this.wakeLoop();
    });
  }

  private queueAck(job: HeldJob): void {
    this.pendingAcks.push(job);
    // The loop waits for this slot: its next claim carries the acknowledgement (one round trip, not two).
    if (this.pausedFor === 'slot') return;
    if (this.ackFlushScheduled) return;
    this.ackFlushScheduled = true;
    // If the loop claims first, the acknowledgements ride along with the claim and this finds nothing.
    setImmediate(() => {
      this.ackFlushScheduled = false;
      this.track(this.flushAcks());
    });
  }

  private async flushAcks(): Promise<void> {
    for (let tries = 1; ; tries++) {
      const acks = this.pendingAcks.splice(0);
      if (acks.length === 0) return;
      const args: string[] = [];
      for (const job of acks) args.push(job.id, job.token);
      try {
        await ackJobsScript.run(this.context.connection.client, this.keyList, args);
        for (const job of acks) this.forget(job);
        return;
      } catch (error) {
        // Still held and extended: the next claim carries them, or the retry below. If none ever lands,
        // the job is delivered again when its visibility deadline passes (at-least-once).
        this.pendingAcks.unshift(...acks);
        this.failed(error);
        if (tries >= 5) return;
        await sleep(this.retryDelay());
      }
    }
  }

  private async recordFailure(job: HeldJob, decoded: DecodedJob<T> | undefined, failure: unknown): Promise<void> {
    const attempt = decoded?.attempts ?? 1;
    const maxAttempts = decoded?.maxAttempts ?? this.options.maxAttempts;
    // A body this version cannot read will not get better with retries.
    const last = !decoded || attempt >= maxAttempts;
    const delay = last ? -1 : backoffDelay(decoded?.backoff ?? this.options.backoff, attempt);
    const message = describeFailure(failure);
    const { deadLetterMaxCount, deadLetterMaxAge } = this.context.retention;
    for (let tries = 1; ; tries++) {
      try {
        const outcome = await failJobScript.run<number>(this.context.connection.client, this.keyList, [
          job.id,
          job.token,
          delay,
          JSON.stringify(message),
          deadLetterMaxCount,
          deadLetterMaxAge,
        ]);
        const events = this.context.events;
        if (outcome === 2 && events?.wants('job.dead')) {
          events.emit('job.dead', { topic: this.topic, id: job.id, attempt, maxAttempts, error: message });
        } else if (outcome === 1 && events?.wants('job.retried')) {
          events.emit('job.retried', { topic: this.topic, id: job.id, attempt, maxAttempts, delayMs: delay, error: message });
        }
        if (outcome === 2) {
          this.context.logger.error(
            `Job ${JSON.stringify(job.id)} of topic ${JSON.stringify(this.topic)} failed on attempt ${attempt} of ${maxAttempts} ` +
              `and was moved to the dead letters (retryDead() requeues it): ${message}`,
          );
        } else if (outcome === 1) {
          this.context.logger.warn(
            `Job ${JSON.stringify(job.id)} of topic ${JSON.stringify(this.topic)} failed on attempt ${attempt} of ${maxAttempts}, ` +
              `retrying in ${delay} ms: ${message}`,
          );
        }
        break;
      } catch (error) {
        this.failed(error);
        if (tries >= 5 || this.state === 'closed') break; // the visibility deadline brings it back anyway
        await sleep(this.retryDelay());
      }
    }
    this.forget(job);
  }

  private forget(job: HeldJob): void {
    this.held.delete(heldKey(job));
    if (this.held.size === 0) this.stopExtender();
  }

  private track(promise: Promise<unknown>): void {
    const settled = promise.catch((error) => this.bug('job settlement', error));
    this.settling.add(settled);
    void settled.finally(() => this.settling.delete(settled));
  }

  /** Last line of defence: an unexpected error in the consumer's own code is logged, never left unhandled. */
  private bug(where: string, error: unknown): void {
    this.context.logger.error(
      `Unexpected error in the ${where} of the delay-queue consumer of topic ${JSON.stringify(this.topic)}: ${describeFailure(error)}`,
    );
  }

  // ---- visibility ----------------------------------------------------------------------------

  private ensureExtender(): void {
    if (this.extendTimer) return;
    const period = Math.max(30, Math.floor(this.options.visibilityTimeout / 3));
    this.extendTimer = setInterval(() => void this.extendAll(), period);
    this.extendTimer.unref();
  }

  private stopExtender(): void {
    clearInterval(this.extendTimer);
    this.extendTimer = undefined;
    clearTimeout(this.visibilityTimer);
    this.visibilityTimer = undefined;
  }

  /**
   * Aborts a job's signal when its confirmed visibility runs out, on a timer of its own. Checking only
   * at the extension ticks (every third of the timeout) let another consumer start the job up to a
   * third of the timeout before this handler was told (found by test/faults/jobs-faults.spec.ts).
   */
  private armVisibilityTimer(): void {
    clearTimeout(this.visibilityTimer);
    this.visibilityTimer = undefined;
    let earliest = Number.POSITIVE_INFINITY;
    for (const job of this.held.values()) {
      if (!job.abandoned && !job.controller?.signal.aborted) earliest = Math.min(earliest, job.confirmedUntil);
    }
    if (earliest === Number.POSITIVE_INFINITY) return;
    const delay = Math.max(0, earliest - this.lossMargin - performance.now());
    this.visibilityTimer = setTimeout(() => {
      this.visibilityTimer = undefined;
      const now = performance.now() + this.lossMargin;
      for (const job of this.held.values()) {
        if (!job.abandoned && !job.controller?.signal.aborted && now >= job.confirmedUntil) this.loseVisibility(job, 'unconfirmed');
      }
      this.armVisibilityTimer();
    }, delay);
    this.visibilityTimer.unref();
  }

  /** Renews every held claim in one call. Never rejects. */
  private async extendAll(): Promise<void> {
    const now = performance.now();
    for (const job of this.held.values()) {
      if (!job.abandoned && now >= job.confirmedUntil) this.loseVisibility(job, 'unconfirmed');
    }
    if (this.extending) return;
    const jobs = [...this.held.values()].filter((job) => !job.abandoned);
    if (jobs.length === 0) return;
    this.extending = true;
    const args: (string | number)[] = [this.options.visibilityTimeout];
    for (const job of jobs) args.push(job.id, job.token);
    const sent = performance.now();
    try {
      const flags = await extendJobsScript.run<number[]>(this.context.connection.client, this.keyList, args);
      jobs.forEach((job, i) => {
        if (flags[i] === 1) job.confirmedUntil = sent + this.options.visibilityTimeout;
        else this.loseVisibility(job, 'not-owner');
      });
      if (this.held.size > 0) this.armVisibilityTimer();
    } catch (error) {
      this.failed(error);
    } finally {
      this.extending = false;
    }
  }

  private loseVisibility(job: HeldJob, reason: 'not-owner' | 'unconfirmed'): void {
    abortJob(job, new JobVisibilityLostError(this.topic, job.id, reason));
    if (reason === 'not-owner' || job.phase === 'buffered') {
      // Someone else owns it now (or nobody: cancelled); never send an outcome for this claim.
      job.abandoned = true;
      const i = this.pendingAcks.indexOf(job);
      if (i >= 0) this.pendingAcks.splice(i, 1);
      if (job.phase === 'settling') this.forget(job);
    }
  }

  // ---- shutdown ------------------------------------------------------------------------------

  private async drain(timeout: number): Promise<void> {
    const deadline = performance.now() + timeout;
    this.state = 'draining';
    this.wakeLoop();
    // A claim stuck on an unreachable Redis must not hold shutdown forever; the loop ends on its own later.
    await settleWithin(this.loopDone, timeout);
    await this.waiter.close();
    // No step below waits for an unreachable Redis (black-holed: its commands never answer) past the
    // deadline plus a short grace, or close() would hang forever (found by the job fault specs). What
    // could not be handed back or acknowledged returns to the queue when its visibility passes.
    const redisBudget = () => Math.max(SHUTDOWN_REDIS_GRACE_MS, deadline - performance.now());
    await settleWithin(this.handBack(this.buffer.splice(0), true), redisBudget());
    const running = [...this.held.values()].filter((job) => job.phase === 'running' && job.done);
    if (running.length > 0) {
      const finished = await settleWithin(Promise.all(running.map((job) => job.done)), deadline - performance.now());
      if (!finished) {
        const stuck = running.filter((job) => job.phase === 'running' && !job.abandoned);
        for (const job of stuck) {
          job.abandoned = true;
          abortJob(job, new ConsumerShutdownTimeoutError(this.topic, job.id, timeout));
        }
        this.context.logger.warn(
          `${stuck.length} handler(s) of topic ${JSON.stringify(this.topic)} still running ${timeout} ms after shutdown began; ` +
            'their signals were aborted and their jobs handed back to the queue.',
        );
        await settleWithin(this.handBack(stuck, false), redisBudget());
      }
    }
    if (this.pendingAcks.length > 0) await settleWithin(this.flushAcks(), redisBudget());
    await settleWithin(Promise.all([...this.settling]), redisBudget());
    this.stopExtender();
    if (this.lastClaimRecord) void this.context.connection.client.del(this.lastClaimRecord).catch(() => undefined);
    this.state = 'closed';
    this.context.onClosed(this);
  }

  /** Returns claims to the queue for another consumer (at shutdown). Never rejects. */
  private async handBack(jobs: HeldJob[], neverStarted: boolean): Promise<void> {
    if (jobs.length === 0) return;
    const args: (string | number)[] = [neverStarted ? '1' : '0'];
    for (const job of jobs) args.push(job.id, job.token, job.dueMs);
    try {
      await releaseJobsScript.run(this.context.connection.client, this.keyList, args);
    } catch (error) {
      this.context.logger.warn(
        `Could not hand ${jobs.length} job(s) of topic ${JSON.stringify(this.topic)} back at shutdown ` +
          `(they return when their visibility timeout passes): ${describeFailure(error)}`,
      );
    }
    for (const job of jobs) {
      job.abandoned = true;
      this.forget(job);
    }
  }

  // ---- Redis failures ------------------------------------------------------------------------

  private failed(error: unknown): void {
    this.failures++;
    const now = performance.now();
    if (now - this.lastFailureLog < 30_000) return;
    this.lastFailureLog = now;
    this.context.logger.warn(
      `Delay-queue consumer of topic ${JSON.stringify(this.topic)}: a Redis call failed, retrying with backoff ` +
        `(further failures are logged at most every 30 s): ${describeFailure(error)}`,
    );
  }

  private recovered(): void {
    if (this.failures === 0) return;
    this.failures = 0;
    this.lastFailureLog = -Infinity;
    this.context.logger.log(`Delay-queue consumer of topic ${JSON.stringify(this.topic)} works with Redis again.`);
  }

  private retryDelay(): number {
    const base = Math.min(5_000, 100 * 2 ** Math.min(10, Math.max(0, this.failures - 1)));
    return Math.round(base * (0.5 + Math.random() / 2));
  }
}

function controllerOf(job: HeldJob): AbortController {
  return (job.controller ??= new AbortController());
}

function abortJob(job: HeldJob, reason: Error): void {
  const controller = controllerOf(job);
  if (!controller.signal.aborted) controller.abort(reason);
}

function heldKey(job: { id: string; token: string }): string {
  return `${job.token}\n${job.id}`;
}

function describeFailure(error: unknown): string {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return message.length > MAX_ERROR_MESSAGE_LENGTH ? `${message.slice(0, MAX_ERROR_MESSAGE_LENGTH)}…` : message;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
