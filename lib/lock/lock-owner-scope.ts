import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockHandle } from './interfaces/lock-handle.interface.js';

interface ScopeFrame {
  /** Redis key of each held lock -> the owner id it is held under. */
  readonly held: ReadonlyMap<string, string>;
  /** The innermost lock whose section this is. */
  readonly handle: LockHandle;
}

/**
 * Which locks the current async call chain holds, and under which owner id.
 *
 * A scope is opened around the code that runs under a lock (`using()`, `@WithLock`); an acquire of
 * a key that an enclosing scope holds re-enters with that scope's owner id. Everything else gets a
 * fresh owner id. This is deliberately narrower than "same async chain = same owner": two branches
 * of one `Promise.all` share a chain but must still exclude each other, and AsyncLocalStorage cannot
 * tell them apart. Re-entrance is therefore tied to being *inside* the locked section.
 */
export class LockOwnerScope {
  private static readonly storage = new AsyncLocalStorage<ScopeFrame>();

  /** Owner id under which the current chain holds `redisKey`, if an enclosing scope holds it. */
  static ownerOf(redisKey: string): string | undefined {
    return this.storage.getStore()?.held.get(redisKey);
  }

  /** The innermost lock section the current chain runs in, if any. */
  static currentHandle(): LockHandle | undefined {
    return this.storage.getStore()?.handle;
  }

  /** Runs `fn` as the section of `handle`, which holds the given keys under the given owners. */
  static run<T>(handle: LockHandle, held: ReadonlyArray<readonly [redisKey: string, owner: string]>, fn: () => T): T {
    const outer = this.storage.getStore();
    const inner = new Map(outer?.held);
    for (const [key, owner] of held) inner.set(key, owner);
    return this.storage.run({ held: inner, handle }, fn);
  }
}
