import { MAX_TIMER_MS } from './timer-delay.js';

/**
 * The one rule for leases kept in Redis (a lock's lease, a claimed job's visibility): when to renew
 * them, and when this process must stop counting on one.
 *
 * Times are `performance.now()` milliseconds (monotonic, so wall-clock jumps do not move them). A
 * lease is counted from the moment the command that took or renewed it was *sent*: Redis started its
 * own count later, after at least half the round trip, so the local deadline can only err on the
 * early side whatever the round trip was.
 */

/** Longest safety margin (reached from a 20 s lease on). */
const MAX_LOSS_MARGIN_MS = 1_000;
/** Shortest safety margin, for leases of 100 ms or more; shorter leases get a tenth of their length. */
const MIN_LOSS_MARGIN_MS = 10;

/**
 * How often a lease is renewed: every third of it, so a renewal can fail (or be answered late) twice
 * before the lease runs out. Whole milliseconds, at least 1, and at most setTimeout's bound (a lease
 * of more than about 74 days is renewed more often than every third of it, which only keeps it
 * safer; an interval past the bound would fire every millisecond).
 */
export function leaseRenewalInterval(lease: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(1, Math.floor(lease / 3)));
}

/**
 * How long before a lease's end it already counts as lost: 5 % of the lease, at least 10 ms (or a
 * tenth of a lease shorter than 100 ms) and at most 1 s. Redis may hand the lease to another the
 * moment its deadline passes, and the holder must have been told (its signal aborted) before that,
 * even when the timer that tells it fires late on a loaded machine; timer lateness is counted in
 * milliseconds, whatever the lease, hence the floor.
 */
export function leaseLossMargin(lease: number): number {
  const floor = Math.min(MIN_LOSS_MARGIN_MS, lease / 10);
  return Math.min(MAX_LOSS_MARGIN_MS, Math.max(floor, Math.round(lease * 0.05)));
}

/**
 * When a lease last confirmed by a command sent at `confirmedSentAt` must be considered lost: its
 * end as seen from here, less the safety margin.
 */
export function leaseLostAt(confirmedSentAt: number, lease: number): number {
  return confirmedSentAt + lease - leaseLossMargin(lease);
}
