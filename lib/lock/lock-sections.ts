import { Injectable } from '@nestjs/common';
import { LockAcquireTimeoutError } from '../core/errors/lock-acquire-timeout.error.js';
import type { AcquireOptions } from './interfaces/acquire-options.interface.js';
import type { LockHandle } from './interfaces/lock-handle.interface.js';
import { HeldLockFrames, type SectionMode } from './held-lock-frames.js';
import { LockHoldRegistry } from './lock-hold-registry.js';
import { LockService } from './lock.service.js';
import { acquireAllOrNothing, lockNamesOf } from './multi-key-acquire.js';
import { MultiLockHandle } from './multi-lock-handle.js';

/**
 * The lock sections of the decorators (`@WithLock`, `@WithRequestLock`): takes a section's locks
 * through the module's `LockService`, and records what a section took so that a nested section of
 * the same keys runs inside it. Internal: the decorators' runner injects it; users reach the same
 * locks through `LockService`.
 *
 * One per module instance: sections of another module instance never cover each other.
 */
@Injectable()
export class LockSections {
  constructor(
    private readonly locks: LockService,
    private readonly holds: LockHoldRegistry,
  ) {}

  /**
   * Takes `key` for a section on the side `mode` names: an exclusive lock as `tryAcquire` when
   * `waitTimeout` is 0 and as `acquire` otherwise; a read or write side as `readWrite(name).read()` /
   * `.write()`, several names all or nothing in the order of `lockNamesOf`, within one `waitTimeout`,
   * as `acquire` takes several mutexes.
   *
   * @returns the handle, or `null` when an exclusive lock was not free (with `waitTimeout: 0`)
   * @throws LockAcquireTimeoutError when not free in time (naming every key of a multi-key lock)
   */
  async acquire(key: string | string[], mode: SectionMode, options: AcquireOptions): Promise<LockHandle | null> {
    const locks = this.locks;
    if (mode === 'exclusive') return options.waitTimeout === 0 ? locks.tryAcquire(key, options) : locks.acquire(key, options);
    const { fair: _fair, ...sideOptions } = options;
    const side = (name: string, partOptions: Omit<AcquireOptions, 'fair'>) =>
      mode === 'read' ? locks.readWrite(name).read(partOptions) : locks.readWrite(name).write(partOptions);
    if (!Array.isArray(key)) return side(key, sideOptions);
    const names = lockNamesOf(key);
    try {
      const parts = await acquireAllOrNothing(names, sideOptions.waitTimeout, {
        acquireOne: (name, remaining) => side(name, { ...sideOptions, waitTimeout: remaining }),
        releaseUnused: (held) => this.holds.releaseUnused(held),
      });
      if (!parts) return null;
      return parts.length === 1 ? parts[0] : new MultiLockHandle(parts);
    } catch (error) {
      if (error instanceof LockAcquireTimeoutError) throw new LockAcquireTimeoutError(names, sideOptions.waitTimeout ?? error.waitTimeout);
      throw error;
    }
  }

  /**
   * The hold under which an enclosing section of this module instance still holds every one of
   * `names` in a mode that covers `mode` (the same, or write for read), or `undefined`.
   */
  covering(names: readonly string[], mode: SectionMode): LockHandle | undefined {
    return HeldLockFrames.covering(this, names, mode);
  }

  /**
   * `LockService.runInScope` for a section: with `taken` (the key and mode the section acquired),
   * nested sections of those keys run inside this hold (`covering`).
   */
  run<T>(handle: LockHandle, fn: () => T, taken?: { key: string | string[]; mode: SectionMode }): T {
    return HeldLockFrames.run(handle, fn, taken && { service: this, names: lockNamesOf(taken.key), mode: taken.mode });
  }
}
