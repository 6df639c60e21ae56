import { OPERATION_RECORD_TTL_MS } from '../jobs/delay-queue.constants.js';
import type { RedisClock } from './redis-clock.js';

/** The part of a write's window kept as a margin for clock rates and steps (1/10: 6 s of the default 60 s row claim). */
const DEADLINE_MARGIN_FRACTION = 0.1;

/**
 * The deadlines of outbox writes. Every write is made under a row claim and carries a deadline on
 * the Redis server's clock, `lowerBound(Redis clock when the claim was sent) + window - margin`,
 * where the window is the row claim's length (`outboxRelay.claimLease`, capped at half the
 * operation records' lifetime). No other relay can claim the rows before their claim deadline, and
 * Redis refuses the write after its own deadline (see jobs/write-fence.ts), so a write held by a
 * stalled link cannot land after another relay wrote the row, ran its job and deleted it.
 */
export class RowClaimDeadlines {
  /** How long after its row claim was sent a write may land, before the margin (ms). */
  readonly windowMs: number;

  constructor(
    private readonly clock: RedisClock,
    claimMs: number,
  ) {
    // Records live OPERATION_RECORD_TTL_MS from the write: every deadline must end well inside that.
    this.windowMs = Math.min(claimMs, OPERATION_RECORD_TTL_MS / 2);
  }

  /**
   * The deadline (ms of the Redis server's clock) of a write whose rows are safe from other relays
   * for `windowMs` (the row claim's window unless given) from local time `from`: a lower bound of
   * the server's clock then, plus the window, minus its margin. Call after `clock.ready()`.
   */
  deadlineOf(from: number, windowMs: number = this.windowMs): number {
    return this.clock.lowerBoundAt(from) + windowMs - Math.ceil(windowMs * DEADLINE_MARGIN_FRACTION);
  }

  /** How long a deleted row's operation record must stay: a write of the row by another relay may still be in flight until its deadline. */
  get recordKeepMs(): number {
    return Math.ceil(this.windowMs * (1 + DEADLINE_MARGIN_FRACTION));
  }
}
