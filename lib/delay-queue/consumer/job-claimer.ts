import { RedisConnectionError } from '../../core/errors/redis-connection.error.js';
import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { RedisLockEvents } from '../../core/events/redis-lock-events.js';
import type { RedisLockConfig } from '../../core/options/redis-lock-config.js';
import type { RedisConnection } from '../../core/connection/redis-connection.js';
import { RedisReachability } from '../../core/redis/reachability.js';
import type { ResolvedConsumerOptions } from './resolve-consumer-options.js';
import { DUE_SCORE_SLOTS } from '../jobs/delay-queue.constants.js';
import { newOperationId, operationKey } from '../jobs/operation-record.js';
import { claimDueJobsScript, type ClaimReply, type RecoveredJob } from '../scripts/claim-due-jobs.lua.js';
import { VISIBILITY_EXPIRED_ON_LAST_ATTEMPT } from '../scripts/claim-steps-lua-snippets.js';
import { ackRecords, keepArguments } from './ack-queue.js';
import type { ClaimedRow, HeldJob } from './held-job.js';
import type { ServerClock } from './server-clock.js';

interface ClaimResult {
  readonly rows: ClaimedRow[];
  /** Server ms of the next due time or visibility deadline; -1 when the topic is empty. */
  readonly nextWake: number;
  readonly moreDue: boolean;
  /** Server ms when the first job still waiting is due; -1 when none is. */
  readonly nextDue: number;
}

interface JobClaimerContext {
  readonly topic: string;
  readonly connection: RedisConnection;
  readonly keys: TopicKeys;
  readonly options: ResolvedConsumerOptions;
  readonly retention: RedisLockConfig['delayQueue']['retention'];
  readonly events?: RedisLockEvents;
  readonly clock: ServerClock;
  /** This shard's part of the consumer's `rateLimit.max` (0: no limit). */
  readonly rateMax: number;
}

/**
 * Calls the claim script (claim-due-jobs.lua.ts) for one topic shard: takes due jobs, carries
 * acknowledgements, and recovers in-flight jobs whose visibility passed (reported as `job.recovered`
 * and, on their last attempt, `job.dead`). Each call names its own operation record, so a claim that
 * ioredis re-sends after a lost reply returns the same batch instead of claiming a second one; the
 * record of the last claim that took jobs is deleted by the next claim (or `discardLastRecord`). A
 * claim that failed with its outcome unknown (RedisConnectionError) is re-sent as the next claim.
 */
export class JobClaimer {
  /** Names this consumer's claim records: `<id>:<sequence>` is unique per claim call. */
  private readonly claimerId = newOperationId();
  private claimSequence = 0;
  /** The record of the last claim that took jobs: its reply has arrived, so the next claim deletes it. */
  private lastClaimRecord?: string;
  /**
   * A claim that failed without an answer from Redis, which may still run it or have run it. Its
   * record (kept for the visibility timeout) lists what such a run took, so the next claim re-sends
   * it, and gets those jobs at once (on the same attempt, with the same tokens) instead of after
   * their visibility timeout. Sent on the same connection, the re-sent claim runs after the late one.
   */
  private unknownClaim?: { readonly record: string; readonly max: number };
  constructor(private readonly context: JobClaimerContext) {}

  /** Claims up to `max` due jobs and records the acknowledgements `acks` in the same call. */
  async claim(max: number, acks: readonly HeldJob[]): Promise<ClaimResult> {
    const { visibilityTimeout, maxAttempts } = this.context.options;
    const { deadLetterMaxCount, deadLetterMaxAge } = this.context.retention;
    // After a claim whose outcome is unknown, the next one is that claim again: same record, same
    // count (`max` 0 only reads back what a late run took, claiming nothing new).
    const unknown = this.unknownClaim;
    const count = max === 0 ? 0 : (unknown?.max ?? max);
    const keep = this.context.options.keepCompleted;
    const record = unknown?.record ?? operationKey(this.context.keys.jobs, `claim:${this.claimerId}:${++this.claimSequence}`);
    const previousRecord = this.lastClaimRecord;
    const keys = { ...this.context.keys, record, previousRecord: previousRecord ?? record };
    const args = {
      maxClaims: count,
      visibilityMs: visibilityTimeout,
      defaultMaxAttempts: maxAttempts,
      deadMaxCount: deadLetterMaxCount,
      deadMaxAgeMs: deadLetterMaxAge,
      rateMax: this.context.rateMax,
      rateWindowMs: this.context.options.rateLimit?.duration ?? 0,
      ...keepArguments(keep),
      deletePrevious: previousRecord !== undefined,
    };
    const issued = performance.now();
    const send = () => claimDueJobsScript.call(this.context.connection, keys, args, ackRecords(acks));
    const { reply: replied, written } = this.context.connection.reachability?.stampWrites?.(send) ?? { reply: send(), written: undefined };
    let reply: ClaimReply;
    try {
      reply = await replied;
    } catch (error) {
      // Redis may run it later (it did not answer) or have run it (the connection dropped with it sent).
      if (error instanceof RedisConnectionError && !RedisReachability.neverSent(error)) this.unknownClaim = { record, max: count };
      throw error;
    }
    this.unknownClaim = undefined;
    const received = performance.now();
    // The run that answered came after the claim's last write, which is later than its issue when
    // it waited in the client's queue for a lost connection to come back, or was re-sent after one.
    const sent = written?.at ?? issued;
    this.context.clock.sync(reply.nowUs, sent, received);
    // The visibility of what it took began when Redis ran the claim (`claimedUs`: for a run answering
    // what an earlier run of the same claim took, that earlier run), mapped to the earliest local
    // moment Redis's clock can have shown it: no earlier than the write (this sample), later when a
    // recent sample shows Redis ran it late (a paused or busy server, a stalled link that healed).
    // Counted from an earlier moment, the local deadline (VisibilityKeeper) would call claims lost
    // that Redis still holds (a job handed back unrun, or a handler's success handed back to run
    // again); from a later one, a handler would not be told in time that its job is another consumer's.
    const visibleSince = this.context.clock.earliestLocal(reply.claimedUs / 1000);
    const claimedAtMs = Math.floor(reply.claimedUs / 1000);
    this.lastClaimRecord = reply.claimed.length > 0 ? record : undefined;
    if (reply.recovered.length > 0) this.reportRecovered(reply.recovered);
    const rows: ClaimedRow[] = reply.claimed.map(({ id, body, dueScore }) => ({
      id,
      body,
      dueMs: Math.floor(dueScore / DUE_SCORE_SLOTS),
      dueScore,
      claimedAtMs,
      sentAt: visibleSince,
    }));
    return { rows, nextWake: reply.nextWakeMs, moreDue: reply.moreDue, nextDue: reply.nextDueMs };
  }

  /**
   * Whether the last claim failed with its outcome unknown: its jobs, if it took any, are claimed
   * under a record only the next claim (`claim`) reads back.
   */
  get outcomeUnknown(): boolean {
    return this.unknownClaim !== undefined;
  }

  /** Deletes the last claim's record (at shutdown; it would expire anyway). Never rejects. */
  discardLastRecord(): void {
    if (this.lastClaimRecord) void this.context.connection.command('del', this.lastClaimRecord).catch(() => undefined);
  }

  /** Reports the jobs the claim's recovery step took back. */
  private reportRecovered(recovered: readonly RecoveredJob[]): void {
    const { events, topic } = this.context;
    if (!events || !(events.wants('job.recovered') || events.wants('job.dead'))) return;
    for (const job of recovered) {
      const base = { topic, id: job.id, attempt: job.attempts, maxAttempts: job.maxAttempts };
      events.emit('job.recovered', { ...base, requeued: job.requeued });
      if (!job.requeued) events.emit('job.dead', { ...base, error: VISIBILITY_EXPIRED_ON_LAST_ATTEMPT, unrecoverable: false });
    }
  }
}
