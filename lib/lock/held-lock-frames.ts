import { AsyncLocalStorage } from 'node:async_hooks';
import { HeldLockHandle } from './held-lock-handle.js';
import type { LockHandle } from './interfaces/lock-handle.interface.js';
import { MultiLockHandle } from './multi-lock-handle.js';
import { processShared } from '../core/runtime/process-shared.js';

/**
 * Which side of a lock a `@WithLock` / `@WithRequestLock` section holds its keys on.
 *
 * @inline
 */
export type SectionMode = 'exclusive' | 'read' | 'write';

/** A key held by an enclosing decorator section: what nested sections of the same key may run inside. */
interface SectionHold {
  readonly mode: SectionMode;
  readonly handle: LockHandle;
}

interface ScopeFrame {
  /** The innermost lock whose section this is. */
  readonly handle: LockHandle;
  /** Redis key of each held lock (its protocol's `reentrancyKey`) -> the owner id it is held under. */
  readonly owners: ReadonlyMap<string, string>;
  /** Per lock service: lock name -> the decorator section's hold of it. */
  readonly sections: ReadonlyMap<object, ReadonlyMap<string, SectionHold>>;
}

/** What a decorator section took, recorded so nested sections of the same keys run inside it. */
interface SectionKeys {
  /** The lock service the section's locks belong to: sections of another service never cover each other. */
  readonly service: object;
  /** The section's lock names, in the order of the handle's parts (canonical order for several). */
  readonly names: readonly string[];
  readonly mode: SectionMode;
}

/**
 * The one registry of what the current async call chain holds, read by the service's re-entrancy
 * (`ownerOf`), by `LockContext` (`currentHandle`) and by the decorator sections' covering check
 * (`covering`).
 *
 * A scope is opened around the code that runs under a lock (`using()`, `runInScope()`, a decorator
 * section); an acquire of a key that an enclosing scope holds re-enters with that scope's owner id,
 * everything else gets a fresh owner id. This is deliberately narrower than "same async chain =
 * same owner": two branches of one `Promise.all` share a chain but must still exclude each other,
 * and AsyncLocalStorage cannot tell them apart. Re-entrance is therefore tied to being *inside*
 * the locked section.
 *
 * Only decorator sections record `SectionKeys`: a nested section is covered by an enclosing
 * decorator section, never by a `using()` scope (inside which it takes a nested hold instead).
 *
 * It records holds and takes none: `DecoratorLockRunner` (decorators) and `LockService` take and
 * release the locks, and `LockContext` is the public, read-only view of the innermost frame.
 */
export class HeldLockFrames {
  /** One per process, shared by both builds of the package (see core/runtime/process-shared.ts). */
  private static readonly storage = processShared('held-lock-frames', () => new AsyncLocalStorage<ScopeFrame>());

  /** Owner id under which the current chain holds `redisKey`, if an enclosing scope holds it. */
  static ownerOf(redisKey: string): string | undefined {
    return this.storage.getStore()?.owners.get(redisKey);
  }

  /** The innermost lock section the current chain runs in, if any. */
  static currentHandle(): LockHandle | undefined {
    return this.storage.getStore()?.handle;
  }

  /**
   * Runs `fn` as the section of `handle`: nested acquires of its re-entrant parts re-enter under
   * their owner ids. With `section`, nested decorator sections of those keys run inside this hold.
   */
  static run<T>(handle: LockHandle, fn: () => T, section?: SectionKeys): T {
    const outer = this.storage.getStore();
    const parts = partsOf(handle);
    const owners = new Map(outer?.owners);
    for (const part of parts) {
      if (part instanceof HeldLockHandle && part.protocol.reentrancyKey !== undefined) {
        owners.set(part.protocol.reentrancyKey, part.owner);
      }
    }
    let sections = outer?.sections ?? new Map<object, ReadonlyMap<string, SectionHold>>();
    if (section) {
      const held = new Map(sections.get(section.service));
      section.names.forEach((name, i) => held.set(name, { mode: section.mode, handle: parts[i] ?? handle }));
      sections = new Map(sections).set(section.service, held);
    }
    return this.storage.run({ handle, owners, sections }, fn);
  }

  /**
   * The hold under which an enclosing decorator section of `service` still holds every one of
   * `names` in a mode that covers `mode` (the same, or write for read), or `undefined`.
   */
  static covering(service: object, names: readonly string[], mode: SectionMode): LockHandle | undefined {
    const held = this.storage.getStore()?.sections.get(service);
    if (!held) return undefined;
    const entries = names.map((name) => held.get(name));
    if (!entries.every((e): e is SectionHold => e !== undefined && covers(e.mode, mode) && e.handle.held)) {
      return undefined;
    }
    return entries.length === 1 ? entries[0].handle : new MultiLockHandle(entries.map((e) => e.handle));
  }
}

/** Whether a hold in mode `held` lets a section that wants `wanted` run inside it. */
export function covers(held: SectionMode, wanted: SectionMode): boolean {
  return held === wanted || (held === 'write' && wanted === 'read');
}

function partsOf(handle: LockHandle): readonly LockHandle[] {
  return handle instanceof MultiLockHandle ? handle.parts : [handle];
}
