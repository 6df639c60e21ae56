import { leaseRenewalInterval } from '../core/time/lease-policy.js';
import { LockNotHeldError } from '../core/errors/lock-not-held.error.js';
import type { LockHandle } from '../lock/interfaces/lock-handle.interface.js';

/**
 * Renews a hold taken with a fixed `leaseTime` every third of that lease, until stopped or lost.
 *
 * A lease of its own (rather than the module's watchdog) lets each `@OnOneInstance` method and each
 * `@LeaderElection` choose its takeover time. A renewal Redis refuses marks the handle lost (its
 * `signal` aborts); one that cannot reach Redis is retried at the next beat, and the handle counts
 * itself lost when its lease runs out unconfirmed.
 */
export class LeaseKeeper {
  private readonly timer: NodeJS.Timeout;
  private renewing = false;

  constructor(
    private readonly handle: LockHandle,
    private readonly ttl: number,
    private readonly onRenewalError: (error: unknown) => void,
  ) {
    this.timer = setInterval(() => void this.renew(), leaseRenewalInterval(ttl));
    this.timer.unref();
    handle.signal.addEventListener('abort', () => this.stop(), { once: true });
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async renew(): Promise<void> {
    if (this.renewing || !this.handle.held) return;
    this.renewing = true;
    try {
      await this.handle.extend(this.ttl);
    } catch (error) {
      // Not held: the handle marked itself lost and aborted its signal; the owner reacts to that.
      if (!(error instanceof LockNotHeldError)) this.onRenewalError(error);
    } finally {
      this.renewing = false;
    }
  }
}
