import type { LockHandle } from './interfaces/lock-handle.interface.js';

/**
 * All-or-nothing hold of several locks. Its signal aborts as soon as any one of them is lost;
 * release lets go of all of them (in reverse order of acquisition).
 */
export class MultiLockHandle implements LockHandle {
  readonly key: string;
  readonly fencingToken: string;
  readonly signal: AbortSignal;

  constructor(readonly parts: readonly LockHandle[]) {
    this.key = parts.map((p) => p.key).join(',');
    this.fencingToken = parts.map((p) => p.fencingToken).join(',');
    this.signal = AbortSignal.any(parts.map((p) => p.signal));
  }

  get held(): boolean {
    return this.parts.every((p) => p.held);
  }

  async release(): Promise<void> {
    const results = await Promise.allSettled([...this.parts].reverse().map((p) => p.release()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  async extend(leaseTime?: number): Promise<void> {
    await Promise.all(this.parts.map((p) => p.extend(leaseTime)));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}
