import type { LockProtocol } from './protocols/lock-protocol.interface.js';
import type { ResolvedAcquireOptions } from './interfaces/acquire-options.interface.js';

/**
 * One acquire call, as `LockAcquirer` decided it: whose hold it takes and until when it may wait.
 * Every try of the call (`BoundedTries`) and the handle of its grant (`LockHoldRegistry.issue`)
 * read it. Internal.
 */
export interface AcquireCall {
  readonly protocol: LockProtocol;
  readonly owner: string;
  /** This call's hold id (AttemptMode.hold), the same for all its tries. */
  readonly hold: string;
  /** The owner id is an enclosing hold's (AttemptMode.reentry). */
  readonly reentry: boolean;
  /** The call waits when the lock is held (AttemptMode.willWait): its tries are bounded by `deadline`. */
  readonly willWait: boolean;
  readonly options: ResolvedAcquireOptions;
  /** Monotonic ms after which the call fails with LockAcquireTimeoutError. */
  readonly deadline: number;
  readonly reportedKey: string | string[];
  /**
   * Set once Redis granted a try of a call that waits: the hold then left any wait line (there is
   * none to leave), and it is the handle's even if issuing the handle fails.
   */
  granted: boolean;
}
