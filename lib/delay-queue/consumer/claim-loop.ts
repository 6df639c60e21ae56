import type { TopicKeys } from '../../core/keys/redis-key-space.js';
import type { RedisConnection } from '../../core/connection/redis-connection.js';
import { retryWithBackoff } from '../../core/time/retry-with-backoff.js';
import { MAX_CLAIM_BATCH } from '../jobs/delay-queue.constants.js';
import { MarkerWaiter, type MarkerOutcome } from './marker-waiter.js';
import type { AckQueue } from './ack-queue.js';
import type { ClaimLoopPause, PauseReason } from './claim-loop-pause.js';
import type { HeldJob } from './held-job.js';
import type { JobClaimer } from './job-claimer.js';
import type { JobRunner } from './job-runner.js';
import type { JobSettlement } from './job-settlement.js';
import type { RedisFailureStreak } from './redis-failure-streak.js';
import type { ServerClock } from './server-clock.js';
import type { VisibilityKeeper } from './visibility-keeper.js';

type ClaimResult = Awaited<ReturnType<JobClaimer['claim']>>;

/** A claim sent ahead, before the jobs of the previous one run (see `ClaimLoop.claimAhead`). */
interface ClaimAhead {
  readonly room: number;
  readonly reply: Promise<ClaimResult>;
}

/** What a claim loop needs from its consumer. */
interface ClaimLoopContext {
  readonly topic: string;
  readonly connection: RedisConnection;
  readonly keys: TopicKeys;
  readonly maxIdleWait: number;
  readonly claimer: JobClaimer;
  readonly runner: Pick<JobRunner<unknown>, 'room' | 'claimSent' | 'enqueue' | 'whenSlotFrees'>;
  /** Whether a claim may be sent ahead of running the jobs just claimed (not with a rate limit). */
  readonly claimsAhead: boolean;
  readonly visibility: VisibilityKeeper;
  /** Each claim carries its queued acknowledgements. */
  readonly acks: AckQueue;
  /** Why the loop waits and how to end it; shared with the ack queue, which may wake it (see `ClaimLoopPause`). */
  readonly loopPause: ClaimLoopPause;
  /** Hands back what a claim returns after the consumer stopped. */
  readonly settlement: JobSettlement;
  readonly failures: RedisFailureStreak;
  readonly clock: ServerClock;
  /** True while the consumer runs; the loop ends once it is false. */
  readonly running: () => boolean;
  /**
   * Called for each job as soon as it is claimed (a repeat tick enqueues its next tick), so a job
   * waiting in the prefetch buffer, or handed back, does not hold up the next tick; the job's
   * handler starts only once it has settled (`HeldJob.preparing`). Never rejects.
   */
  readonly beforeRun?: (jobId: string) => Promise<void> | undefined;
}

/**
 * Decides when to claim, and how much: as many due jobs as the runner has room for (one claim call,
 * which also carries the ack queue), then waits for the next reason to claim: room, the
 * next due time, or a marker pushed by a producer. A backlog of short jobs is thus drained in batches
 * of up to twice the concurrency per round trip; with every slot busy on long handlers the runner has
 * no room, and the loop leaves due jobs (and the markers announcing them) to other consumers. Due
 * times are met by a local timer set from the Redis clock, not by Redis's blocking timeout, which
 * only fires on the server's 100 ms cron tick. The BZPOPMIN on
 * the marker only brings news (an earlier job, a burst to share); it times out every `maxIdleWait`
 * as a safety net. A failed claim is retried after the failure streak's backoff; the loop never throws.
 */
export class ClaimLoop {
  private readonly waiter: MarkerWaiter;
  /** A marker arrived while a claim was travelling: claim again instead of waiting. */
  private wakePending = false;
  /** The next due time the last claim reported and no other consumer was told of (-1: none). */
  private unsharedDue = -1;
  /** The last due time handed to another consumer that way (not posted twice). */
  private sharedDue = -1;
  /** A marker woke this loop and no claim has been sent since: if it finds no room, the marker is passed on. */
  private markerInHand = false;
  private readonly stopWatching?: () => void;
  /** The claim sent ahead, whose reply the next turn of the loop takes instead of claiming. */
  private ahead?: ClaimAhead;

  constructor(private readonly context: ClaimLoopContext) {
    this.waiter = new MarkerWaiter(
      context.connection,
      context.keys.marker,
      `delay-queue consumer ${context.topic}`,
      context.maxIdleWait,
      (outcome) => this.onMarker(outcome),
      (error) => context.failures.failed(error),
    );
    // A claim that failed on an unreachable Redis is retried as soon as it answers again.
    this.stopWatching = context.connection.reachability?.onReachable(() => {
      if (context.loopPause.reason === 'retry') this.wake();
    });
  }

  /** Blocking connections opened so far (a hung or closed one is replaced). */
  get blockingConnectionsOpened(): number {
    return this.waiter.connectionsOpened;
  }

  /** Claims until the consumer stops running; buffered jobs of a claim that returns after that are handed back. */
  async run(): Promise<void> {
    const { failures, running } = this.context;
    while (running()) {
      await retryWithBackoff(() => this.claimOnce(), {
        failed: (error) => failures.failed(error),
        delay: () => failures.retryDelay(),
        wait: (ms) => this.pause('retry', -1, ms),
        stopped: () => !running(),
      });
    }
    await this.handBackClaimAhead();
    if (this.context.claimer.outcomeUnknown) await this.handBackUnknownClaim();
  }

  /** The consumer stopped with a claim sent ahead: its jobs, once its reply is in, are handed back at once. */
  private async handBackClaimAhead(): Promise<void> {
    const ahead = this.ahead;
    if (!ahead) return;
    this.ahead = undefined;
    const { visibility, settlement, failures } = this.context;
    try {
      const claim = await ahead.reply;
      await settlement.handBack(
        claim.rows.map((row) => visibility.hold(row)),
        true,
      );
    } catch (error) {
      failures.failed(error);
    }
  }

  /**
   * The consumer stops after a claim whose outcome is unknown: the claim is re-sent once to read
   * back what a late run took, which is handed back at once. When Redis still cannot be reached,
   * those jobs are left to their visibility timeout.
   */
  private async handBackUnknownClaim(): Promise<void> {
    const { claimer, visibility, settlement } = this.context;
    try {
      const claim = await claimer.claim(0, []);
      await settlement.handBack(
        claim.rows.map((row) => visibility.hold(row)),
        true,
      );
    } catch (error) {
      this.context.failures.failed(error);
    }
  }

  /** One turn of the loop: claims what there is room for, then waits for the next reason to claim. */
  private async claimOnce(): Promise<void> {
    const { runner, visibility, settlement, failures, acks } = this.context;
    let room: number;
    let claim: ClaimResult;
    const ahead = this.ahead;
    if (ahead) {
      this.ahead = undefined;
      room = ahead.room;
      claim = await ahead.reply;
    } else {
      room = Math.min(MAX_CLAIM_BATCH, runner.room);
      if (room <= 0) {
        this.shareNextDue();
        return this.pause('slot');
      }
      this.wakePending = false;
      this.markerInHand = false;
      claim = await this.send(room);
    }
    failures.recovered();
    // With more due, the claim script has woken another consumer already.
    this.unsharedDue = claim.moreDue || claim.nextDue === this.sharedDue ? -1 : claim.nextDue;
    const claimed = claim.rows.map((row) => visibility.hold(row));
    if (!this.context.running()) return settlement.handBack(claimed, true);
    const backlog = claim.rows.length >= room || claim.moreDue;
    if (backlog) this.claimAhead();
    this.prepare(claimed);
    runner.enqueue(claimed);
    if (backlog) return;
    if (this.wakePending) return;
    // Acknowledgements held back while the claim sent ahead travelled ride on a claim now, as they
    // would have on the one after it: a group's next job is claimed in the script that frees its turn.
    if (ahead && acks.waiting > 0 && runner.room > 0) return;
    await this.pause('work', claim.nextWake);
  }

  /** Sends a claim for `room` jobs, carrying the queued acknowledgements. */
  private send(room: number): Promise<ClaimResult> {
    const { claimer, runner, acks } = this.context;
    runner.claimSent();
    return acks.carry((carried) => claimer.claim(room, carried));
  }

  /**
   * With a backlog of due jobs and short handlers, the next claim leaves before the jobs just claimed
   * run: it travels, and Redis runs it, while this process runs those handlers, instead of each side
   * waiting for the other. It asks for the room the runner has besides those jobs, which short handlers have turned over lately
   * (SlotTurnover), so the jobs held ahead of a slot stay
   * within twice the runner's room, and the buffer's hold limit hands back any that wait too long.
   * Never with a rate limit (a claim is a counted start: its jobs must start at once). The claim goes
   * on the wire now: the handlers run in this turn, before its writes would otherwise leave. Only one
   * claim is ever in flight (each is sent once the previous reply is in), so claim records and re-sends
   * work as for any claim; the queued acknowledgements ride on the claim after it.
   */
  private claimAhead(): void {
    const { runner, connection, acks, claimsAhead } = this.context;
    if (!claimsAhead) return;
    const room = Math.min(MAX_CLAIM_BATCH, runner.room);
    if (room <= 0) return;
    this.wakePending = false;
    const reply = this.send(room);
    // Awaited by the loop's next turn (or at stop); marked handled so a failure meanwhile is not "unhandled".
    reply.catch(() => undefined);
    this.ahead = { room, reply };
    acks.claimComesNext = true;
    connection.writeNow();
  }

  /**
   * This consumer has no room: if it alone knows when the next job falls due (the producer's marker
   * or its last claim told it), or a marker woke it for work it cannot take, it posts the marker
   * again, so that a consumer parked on it claims and watches that due time instead. Otherwise the
   * job would wait for a free slot here or for another consumer's idle timeout.
   */
  private shareNextDue(): void {
    const markerInHand = this.markerInHand;
    this.markerInHand = false;
    if (this.unsharedDue < 0 && !markerInHand) return;
    if (this.unsharedDue >= 0) this.sharedDue = this.unsharedDue;
    this.unsharedDue = -1;
    this.passMarker();
  }

  /** Posts the marker again, for a consumer parked on it. */
  private passMarker(): void {
    this.context.connection.command('zadd', this.context.keys.marker, 0, 'wake').catch(() => undefined);
  }

  /** Ends the current pause at once. */
  wake(): void {
    this.context.loopPause.wake();
  }

  /**
   * Starts each claimed job's preparation (`beforeRun`). One may enqueue a job of this topic (a repeat
   * tick enqueues the next tick): once it has, the loop claims again if it waits for work, to learn
   * the new due time, so that the consumer which ran the tick knows of the next one besides the one
   * the producer's marker woke (if that one stops or dies, the next tick is not left to the others'
   * idle timeout).
   */
  private prepare(jobs: readonly HeldJob[]): void {
    const { beforeRun } = this.context;
    if (!beforeRun) return;
    for (const job of jobs) {
      const preparing = beforeRun(job.id);
      if (!preparing) continue;
      job.preparing = preparing;
      preparing.then(
        () => {
          if (this.context.loopPause.reason === 'work') this.wake();
        },
        () => undefined,
      );
    }
  }

  /** Closes the blocking connection (at shutdown). */
  closeWaiter(): Promise<void> {
    this.stopWatching?.();
    return this.waiter.close();
  }

  /** Resolves on the next reason to look at the queue again (see the class comment). */
  private pause(reason: PauseReason, nextWake = -1, sleepMs = 0): Promise<void> {
    const { loopPause } = this.context;
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      // Idempotent: a second call finds its pause ended already.
      const done = () => {
        clearTimeout(timer);
        if (loopPause.end(done)) this.pauseChanged();
        resolve();
      };
      if (!this.context.running()) return resolve();
      loopPause.begin(reason, done);
      this.pauseChanged();
      if (reason === 'slot') {
        // Coalesce: handlers finishing in the same turn are acknowledged and replaced by one claim.
        void this.context.runner.whenSlotFrees().then(() => setImmediate(done));
      } else if (reason === 'retry') {
        timer = setTimeout(done, sleepMs);
      } else if (reason === 'work') {
        const delay = nextWake >= 0 ? nextWake - this.context.clock.now() : Infinity;
        if (delay <= 0) return done();
        if (delay < this.context.maxIdleWait) timer = setTimeout(done, Math.max(1, Math.ceil(delay)));
        this.waiter.ensureWaiting();
      }
      timer?.unref();
    });
  }

  /**
   * While the loop waits for a free slot, or a claim sent ahead is in flight, the claim that follows
   * carries the acknowledgements queued meanwhile.
   */
  private pauseChanged(): void {
    this.context.acks.claimComesNext = this.context.loopPause.reason === 'slot' || this.ahead !== undefined;
  }

  private onMarker(outcome: MarkerOutcome): void {
    const pausedFor = this.context.loopPause.reason;
    if (pausedFor === 'work') {
      // Whoever posted it may count on this wake-up alone: if this loop finds no room, it passes it on.
      if (outcome === 'popped') this.markerInHand = true;
      return this.wake();
    }
    if (outcome !== 'popped') return;
    if (pausedFor === 'slot') {
      // We cannot take more work: hand the wake-up to another consumer instead of swallowing it.
      this.passMarker();
    } else {
      this.wakePending = true;
    }
  }
}
