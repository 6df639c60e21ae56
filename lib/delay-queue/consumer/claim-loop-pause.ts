/** What a claim loop waits for: a free slot, new work (due time or marker), or the end of a retry delay. */
export type PauseReason = 'slot' | 'work' | 'retry';

/**
 * A claim loop's current pause: why it waits, and how to end the wait. The loop pauses and wakes
 * itself through it; the loop's ack queue, built before the loop, wakes it through it too, when a job
 * of a group is acknowledged while the loop waits for work. Invariant: at most one pause at a time;
 * ending one that a later pause replaced changes nothing.
 */
export class ClaimLoopPause {
  private waitingFor?: PauseReason;
  private resume?: () => void;

  /** What the loop waits for now; undefined while it claims or runs. */
  get reason(): PauseReason | undefined {
    return this.waitingFor;
  }

  /** The loop waits for `reason` until `resume` is called (by itself, or by `wake`). */
  begin(reason: PauseReason, resume: () => void): void {
    this.resume = resume;
    this.waitingFor = reason;
  }

  /** The pause that `resume` began is over; false (and nothing changes) when another pause has replaced it. */
  end(resume: () => void): boolean {
    if (this.resume !== resume) return false;
    this.resume = undefined;
    this.waitingFor = undefined;
    return true;
  }

  /** Ends the current pause at once. */
  wake(): void {
    this.resume?.();
  }

  /**
   * Ends the pause if the loop waits for new work, and tells whether it did: the loop then claims at
   * once, carrying the acknowledgements queued, so that a group's next job is claimed by the script
   * that frees its turn instead of after a flush of its own.
   */
  wakeForWork(): boolean {
    if (this.waitingFor !== 'work') return false;
    this.wake();
    return true;
  }
}
