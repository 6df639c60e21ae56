import type { LockHandle } from './interfaces/lock-handle.interface.js';
import { checkedOnRead } from '../core/time/lease-checked-signal.js';

/**
 * All-or-nothing hold of several locks. Its signal aborts as soon as any one of them is lost (read
 * after a pause, it checks its parts' leases first, as theirs do); release lets go of all of them
 * (in reverse order of acquisition).
 */
export class MultiLockHandle implements LockHandle {
  readonly key: string;
  readonly fencingToken: string;
  // Made on first read of `signal`, as a single hold's is.
  private controller?: AbortController;
  /** Whether the signal was aborted (kept here: reading the signal's own `aborted` runs the check). */
  private ended = false;

  /** Each key's token; `fencingToken` is the greatest of them, so it stays a decimal that fits a bigint column. */
  readonly fencingTokens: Readonly<Record<string, string>>;

  constructor(readonly parts: readonly LockHandle[]) {
    this.key = parts.map((p) => p.key).join(',');
    this.fencingTokens = Object.freeze(Object.assign({}, ...parts.map((p) => p.fencingTokens)) as Record<string, string>);
    this.fencingToken = parts.map((p) => p.fencingToken).reduce((a, b) => (BigInt(b) > BigInt(a) ? b : a));
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      const onAbort = (event: Event) => this.end((event.target as AbortSignal).reason);
      for (const part of this.parts) part.signal.addEventListener('abort', onAbort, { once: true });
      checkedOnRead(this.controller.signal, () => this.checkParts());
      this.checkParts();
    }
    return this.controller.signal;
  }

  get held(): boolean {
    const held = this.parts.every((p) => p.held);
    if (!held) this.checkParts();
    return held;
  }

  /** True only if every part ended a live hold (see `LockHandle.release`). */
  async release(): Promise<boolean> {
    const results = await Promise.allSettled([...this.parts].reverse().map((p) => p.release()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return results.every((r) => r.status === 'fulfilled' && r.value);
  }

  async extend(leaseTime?: number): Promise<void> {
    await Promise.all(this.parts.map((p) => p.extend(leaseTime)));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Aborts this signal, synchronously, with the reason of the first part found lost (reading a part's signal checks its lease). */
  private checkParts(): void {
    if (!this.controller || this.ended) return;
    const lost = this.parts.find((p) => p.signal.aborted);
    if (lost) this.end(lost.signal.reason);
  }

  private end(reason: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.controller!.abort(reason);
  }
}
