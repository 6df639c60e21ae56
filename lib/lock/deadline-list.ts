import { timerDelay } from '../core/time/timer-delay.js';

/** One callback waiting in a `DeadlineList`; `cancel` it once it is no longer needed. */
export interface Deadline {
  /** Monotonic ms (performance.now()) at which the callback runs. */
  readonly at: number;
  /** True once it ran or was cancelled. */
  done: boolean;
}

interface Entry extends Deadline {
  readonly fire: () => void;
}

/** Cancelled entries are dropped in one pass once there are this many (and more than live ones). */
const COMPACT_AFTER = 1024;

/**
 * Callbacks due at monotonic deadlines, on one Node timer for all of them (armed for the earliest),
 * instead of one `setTimeout` per deadline: the lock keeps two deadlines per hold (the hung-call
 * deadline of each try, the lease end of each handle), and a Node timer costs about half a
 * microsecond to set and clear, more than the rest of that bookkeeping.
 *
 * Entries are kept in the order they were added; most are cancelled in about that order (replies
 * on one connection arrive in the order their commands were sent, short holds end in order), so
 * cancelled entries at the front are dropped at once and the list stays short. Out-of-order ones
 * are skipped when the timer fires and dropped in one pass when they pile up.
 *
 * A callback runs no later than a `setTimeout` of `Math.floor(at - now)` ms would (the timer is
 * armed that way for the earliest entry), and never more than 1 ms before `at`.
 */
export class DeadlineList {
  private entries: Entry[] = [];
  private head = 0;
  private live = 0;
  private cancelled = 0;
  private timer?: NodeJS.Timeout;
  /** When the timer is set to fire (Infinity: not set). */
  private armedAt = Number.POSITIVE_INFINITY;

  /**
   * @param keepsAlive whether pending deadlines keep the process alive, as a referenced `setTimeout`
   *   would (the hung-call deadline of a try); lease ends do not.
   */
  constructor(private readonly keepsAlive: boolean) {}

  /** Runs `fire` at `at` (monotonic ms) unless cancelled first. */
  add(at: number, fire: () => void): Deadline {
    const entry: Entry = { at, fire, done: false };
    this.entries.push(entry);
    if (++this.live === 1 && this.keepsAlive) this.timer?.ref();
    if (at < this.armedAt) this.arm(at);
    return entry;
  }

  /** Drops `deadline` (no effect once it ran or was cancelled). */
  cancel(deadline: Deadline | undefined): void {
    if (!deadline || deadline.done) return;
    deadline.done = true;
    this.cancelled++;
    if (--this.live === 0 && this.keepsAlive) this.timer?.unref();
    const { entries } = this;
    while (this.head < entries.length && entries[this.head].done) {
      this.head++;
      this.cancelled--;
    }
    if (this.head === entries.length) {
      this.entries = [];
      this.head = 0;
      this.cancelled = 0;
    } else if (this.cancelled > COMPACT_AFTER && this.cancelled > this.live) {
      this.compact();
    }
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.armedAt = at;
    // A deadline past setTimeout's bound (a lease of weeks) arms the timer for the bound: it fires
    // early, finds nothing due and re-arms for what is left.
    this.timer = setTimeout(() => this.fireDue(), timerDelay(Math.floor(at - performance.now())));
    if (!this.keepsAlive || this.live === 0) this.timer.unref();
  }

  private fireDue(): void {
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    const due: Entry[] = [];
    let next = Number.POSITIVE_INFINITY;
    for (let i = this.head; i < this.entries.length; i++) {
      const entry = this.entries[i];
      if (entry.done) continue;
      // Within the millisecond that a whole-ms setTimeout of the same deadline rounds away.
      if (entry.at - now < 1) due.push(entry);
      else if (entry.at < next) next = entry.at;
    }
    for (const entry of due) {
      entry.done = true;
      this.live--;
    }
    // Earliest first, as Node runs overdue timers, whatever order they were added in.
    if (due.length > 1) due.sort((a, b) => a.at - b.at);
    this.compact();
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
    // After the list is consistent: a callback may add or cancel deadlines. One that throws does
    // not keep the others from running; its error surfaces as an uncaught exception, as a throw
    // in a setTimeout callback would.
    for (const entry of due) {
      try {
        entry.fire();
      } catch (error) {
        process.nextTick(() => {
          throw error;
        });
      }
    }
  }

  private compact(): void {
    this.entries = this.entries.filter((entry, i) => i >= this.head && !entry.done);
    this.head = 0;
    this.cancelled = 0;
  }
}
