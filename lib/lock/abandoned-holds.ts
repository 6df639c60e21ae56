import { Injectable, Logger } from '@nestjs/common';
import { errorMessage } from '../core/errors/error-message.js';
import { RedisConnectionError } from '../core/errors/redis-connection.error.js';
import { RedisConnection } from '../core/connection/redis-connection.js';
import type { LockProtocol } from './protocols/lock-protocol.interface.js';

/** First and longest pause between two tries of `releaseUnknown` while Redis cannot be reached (ms). */
const UNDO_FIRST_RETRY_MS = 100;
const UNDO_MAX_RETRY_MS = 2_000;

/**
 * Ends in Redis, in the background and never failing, the holds nobody else will release: a try
 * whose caller gave up while it was in flight, a try whose outcome is unknown, a hold this side
 * already counts as lost. The lease frees each of them anyway; ending them sooner lets the next
 * holder in at once. Used by `LockAcquirer` (tries) and `LockHoldRegistry` (handles).
 *
 * One per module instance.
 */
@Injectable()
export class AbandonedHolds {
  private readonly logger = new Logger('LockService');
  private stopped = false;
  /** Ends the retry waits of `releaseUnknown` (at stop). */
  private readonly undoWaits = new Set<() => void>();

  constructor(private readonly connection: RedisConnection) {}

  /**
   * Ends one hold (by its id) of an acquire whose caller is gone: it gave up while the winning try
   * was in flight, or the handle already counts as lost. A hold Redis dropped already makes the
   * release a no-op.
   */
  releaseAbandoned(protocol: LockProtocol, owner: string, hold: string): void {
    protocol.release(this.connection, owner, hold).catch((error: unknown) => {
      if (this.connection.outages.absorb('abandoned acquires left to their lease', error)) return;
      this.logger.debug(`Could not release an abandoned acquire of "${protocol.name}": ${errorMessage(error)}`);
    });
  }

  /**
   * Ends one hold (by its id) of a grant its call will not get (Redis ran the try after the lease
   * counted locally): resolves once Redis ran the release. The call's next try, under the same owner
   * and hold ids, goes out only then: run before the release, it would find that hold as its own
   * (a replay to the scripts) and the release would then end the hold of a handle just issued.
   * When Redis does not answer, the error is the call's, and the release goes on in the background
   * (`releaseUnknown`) until a lease from now has passed.
   */
  giveBack(protocol: LockProtocol, owner: string, hold: string, leaseTime: number): Promise<void> {
    return protocol.release(this.connection, owner, hold).then(
      () => undefined,
      (error: unknown) => {
        if (error instanceof RedisConnectionError) this.releaseUnknown(protocol, owner, hold, performance.now() + leaseTime);
        throw error;
      },
    );
  }

  /**
   * Ends in Redis one hold (by its id) of a try whose outcome is unknown: Redis did not answer it
   * (it may run it when it resumes) or the connection dropped with it sent. Sent on the same
   * connection as that try, after it, so Redis runs the release after the try: a grant nobody
   * received is undone, and a try that never ran or was refused makes it a no-op (the release is
   * ownership- and hold-checked). A kind with a wait line is left too (`leave`). While Redis is
   * unreachable it is retried each time the connection becomes reachable again, and with backoff,
   * until it is done or `until` (monotonic ms: the lease's end, when Redis frees the hold anyway)
   * passes, or the module stops.
   */
  releaseUnknown(protocol: LockProtocol, owner: string, hold: string, until: number): void {
    this.undoUntil(protocol, owner, hold, until).catch(() => undefined);
  }

  /** Gives up every retry: the module is shutting down. */
  stop(): void {
    this.stopped = true;
    for (const wake of [...this.undoWaits]) wake();
  }

  private async undoUntil(protocol: LockProtocol, owner: string, hold: string, until: number): Promise<void> {
    const connection = this.connection;
    let released = false;
    for (let delay = UNDO_FIRST_RETRY_MS; ; delay = Math.min(delay * 2, UNDO_MAX_RETRY_MS)) {
      if (this.stopped || connection.ended || performance.now() >= until) {
        this.logger.debug(`Gave up undoing an unanswered acquire of "${protocol.name}": its lease frees it.`);
        return;
      }
      try {
        if (!released) await protocol.release(connection, owner, hold);
        released = true;
        if (protocol.leave) await protocol.leave(connection, owner);
        return;
      } catch (error) {
        if (!(error instanceof RedisConnectionError)) {
          this.logger.debug(`Could not undo an unanswered acquire of "${protocol.name}": ${errorMessage(error)}`);
          return;
        }
      }
      await this.untilReachableOr(Math.min(delay, until - performance.now()));
    }
  }

  /** Resolves when the connection is reachable again, after `ms`, or when the module stops. */
  private untilReachableOr(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stopListening?.();
        this.undoWaits.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      timer.unref();
      const stopListening = this.connection.reachability?.onReachable(done);
      this.undoWaits.add(done);
    });
  }
}
