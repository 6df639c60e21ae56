import { AsyncLocalStorage } from 'node:async_hooks';

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
  private static readonly storage = new AsyncLocalStorage<ReadonlyMap<string, string>>();

  /** Owner id under which the current chain holds `redisKey`, if an enclosing scope holds it. */
  static ownerOf(redisKey: string): string | undefined {
    return this.storage.getStore()?.get(redisKey);
  }

  /** Runs `fn` in a scope that additionally holds the given keys under the given owners. */
  static run<T>(held: ReadonlyArray<readonly [redisKey: string, owner: string]>, fn: () => T): T {
    const outer = this.storage.getStore();
    const inner = new Map(outer);
    for (const [key, owner] of held) inner.set(key, owner);
    return this.storage.run(inner, fn);
  }
}
