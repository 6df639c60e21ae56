import type { LockHandle } from '../../../lib/lock/interfaces/lock-handle.interface.js';

/** A handle that only records its state: for pure logic that reads handles, never for Redis behaviour. */
export class FakeLockHandle implements LockHandle {
  readonly signal: AbortSignal = new AbortController().signal;
  held = true;
  releases = 0;

  constructor(
    readonly key: string,
    readonly fencingToken = '1',
  ) {}

  get fencingTokens(): Readonly<Record<string, string>> {
    return { [this.key]: this.fencingToken };
  }

  async release(): Promise<boolean> {
    this.releases++;
    const wasHeld = this.held;
    this.held = false;
    return wasHeld;
  }

  async extend(): Promise<void> {}

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}
