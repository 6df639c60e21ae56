import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@nestjs/common';
import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { LockAcquireTimeoutError } from '../core/errors/lock-acquire-timeout.error.js';
import { MAX_TIMER_MS } from '../core/options/resolve-redis-lock-config.js';
import type { AcquireOptions } from './interfaces/acquire-options.interface.js';
import type { LockHandle } from './interfaces/lock-handle.interface.js';
import type { LockService } from './lock.service.js';
import { acquireAllOrNothing } from './multi-key-acquire.js';
import { MultiLockHandle } from './multi-lock-handle.js';
import { errorMessage } from '../core/errors/error-message.js';

/** Which lock a `@WithLock` / `@WithRequestLock` section takes. */
export type WithLockMode = 'exclusive' | 'read' | 'write';

/** What the caller sees when the lock could not be taken in time. */
export interface LockUnavailableContext {
  /** The key (or keys) that could not be locked. */
  readonly key: string | readonly string[];
  /** The call's arguments (for `@WithRequestLock`: the handler's raw arguments, e.g. `[req, res, next]`). */
  readonly args: readonly unknown[];
  /** What `onLocked: 'throw'` would have thrown. */
  readonly error: LockAcquireTimeoutError;
}

/**
 * When the lock is still held by someone else after `waitTimeout`:
 * - `'throw'` (default): reject with `LockAcquireTimeoutError` (HTTP: 409 Conflict);
 * - `'skip'`: do not run the method, resolve `undefined`;
 * - a function: do not run the method, resolve what the function returns (or reject with what it throws).
 */
export type OnLocked = 'throw' | 'skip' | ((context: LockUnavailableContext) => unknown);

/** Options of `@WithLock` and `@WithRequestLock`. Unset values fall back to the module's `lock` defaults. */
export interface WithLockOptions {
  /** Longest wait for the lock in ms; `0` tries once and never waits. */
  waitTimeout?: number;
  /** Fixed lease in ms (no watchdog). Omit it to have the lease renewed while the method runs. */
  leaseTime?: number;
  /** FIFO hand-off between waiters (exclusive mode only). */
  fair?: boolean;
  /**
   * `'exclusive'` (default): a mutex. `'read'` / `'write'`: the two sides of `locks.readWrite(key)`,
   * many readers at once or one writer.
   */
  mode?: WithLockMode;
  /** What happens when the lock cannot be taken in time. Default `'throw'`. */
  onLocked?: OnLocked;
}

/** `WithLockOptions` after validation. Internal. */
export interface WithLockSettings {
  /** `acquire.keyPattern` is the decorator's key template (the metric label and span attribute). */
  readonly acquire: AcquireOptions;
  readonly mode: WithLockMode;
  readonly onLocked: OnLocked;
  /** Where the decorator sits (`@WithLock on Class.method()`), for messages and spans. */
  readonly location: string;
}

/**
 * Validates decorator options when the decorator is applied; a bad value names the method.
 * `keyPattern` names the section's locks in metrics and traces (see `keyPatternOf`).
 */
export function resolveWithLockSettings(
  options: WithLockOptions | undefined,
  location: string,
  keyPattern?: string,
): WithLockSettings {
  const o = options ?? {};
  const invalid = (option: string, problem: string) => new InvalidOptionsError(option, `${problem} (in ${location})`);
  if (typeof o !== 'object' || o === null) throw invalid('options', 'expected an object');
  const known = new Set(['waitTimeout', 'leaseTime', 'fair', 'mode', 'onLocked']);
  const unknown = Object.keys(o).find((k) => !known.has(k));
  if (unknown !== undefined) {
    throw invalid(unknown, `unknown option; use ${[...known].join(', ')}`);
  }
  const durationOf = (name: 'waitTimeout' | 'leaseTime', min: number) => {
    const value = o[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > MAX_TIMER_MS) {
      throw invalid(name, `got ${String(value)}; use a number of milliseconds from ${min} to ${MAX_TIMER_MS}`);
    }
    return value;
  };
  const waitTimeout = durationOf('waitTimeout', 0);
  const leaseTime = durationOf('leaseTime', 10);
  if (o.fair !== undefined && typeof o.fair !== 'boolean') throw invalid('fair', 'use true or false');
  const mode = o.mode ?? 'exclusive';
  if (mode !== 'exclusive' && mode !== 'read' && mode !== 'write') {
    throw invalid('mode', `got ${JSON.stringify(mode)}; use 'exclusive', 'read' or 'write'`);
  }
  if (o.fair && mode !== 'exclusive') throw invalid('fair', `fair hand-off applies to exclusive locks, not mode '${mode}'`);
  const onLocked = o.onLocked ?? 'throw';
  if (onLocked !== 'throw' && onLocked !== 'skip' && typeof onLocked !== 'function') {
    throw invalid('onLocked', `got ${JSON.stringify(onLocked)}; use 'throw', 'skip' or a function`);
  }
  const acquire: AcquireOptions = {};
  if (waitTimeout !== undefined) acquire.waitTimeout = waitTimeout;
  if (leaseTime !== undefined) acquire.leaseTime = leaseTime;
  if (o.fair !== undefined) acquire.fair = o.fair;
  if (keyPattern !== undefined) acquire.keyPattern = keyPattern;
  return { acquire, mode, onLocked, location };
}

/**
 * A decorator's key source as a low-cardinality name: the template itself (`'order:<0>'`), templates
 * joined by ` + ` for a multi-key lock, and the method's name for a key function (whose keys could be anything).
 */
export function keyPatternOf(source: unknown, methodName: string): string {
  if (typeof source === 'string') return source;
  if (Array.isArray(source) && source.every((part) => typeof part === 'string')) return source.join(' + ');
  return methodName;
}

/** A lock section being entered: either a fresh hold, or one that an enclosing section already covers. */
export interface LockSection {
  readonly handle: LockHandle;
  /** False when an enclosing section of the same service already holds these keys: nothing to release. */
  readonly owned: boolean;
}

interface HeldEntry {
  readonly mode: WithLockMode;
  readonly handle: LockHandle;
}

/** Keys held by the enclosing `@WithLock` / `@WithRequestLock` sections of the current call chain, per service. */
const sections = new AsyncLocalStorage<ReadonlyMap<LockService, ReadonlyMap<string, HeldEntry>>>();
const logger = new Logger('WithLock');

/**
 * Takes the lock for a section, unless an enclosing section of the same `LockService` already
 * holds every key in a mode that covers this one (then the section runs inside that hold, so a
 * route lock plus a method lock on the same key, or a locked method calling itself, hold it once).
 *
 * @returns the section, or the `LockAcquireTimeoutError` when the lock was not free in time
 */
export async function enterLockSection(
  locks: LockService,
  key: string | string[],
  settings: WithLockSettings,
): Promise<LockSection | LockAcquireTimeoutError> {
  const covering = coveringHandle(locks, key, settings.mode);
  if (covering) return { handle: covering, owned: false };
  try {
    const handle = await take(locks, key, settings);
    if (handle) return { handle, owned: true };
  } catch (error) {
    if (error instanceof LockAcquireTimeoutError) return error;
    throw error;
  }
  return new LockAcquireTimeoutError(key, settings.acquire.waitTimeout ?? 0);
}

/** Runs `fn` as the body of `section`: `LockContext.current()` and nested acquires see the lock. */
export function runInLockSection<T>(
  locks: LockService,
  key: string | string[],
  settings: WithLockSettings,
  section: LockSection,
  fn: () => T,
): T {
  const outer = sections.getStore();
  const forService = new Map(outer?.get(locks));
  const parts = section.handle instanceof MultiLockHandle ? section.handle.parts : [section.handle];
  const names = Array.isArray(key) ? [...new Set(key)].sort() : [key];
  if (section.owned) {
    names.forEach((name, i) => forService.set(name, { mode: settings.mode, handle: parts[i] ?? section.handle }));
  }
  const inner = new Map(outer);
  inner.set(locks, forService);
  return sections.run(inner, () => locks.runInScope(section.handle, fn));
}

/** Releases a section's hold if it took one. Never throws: a failed release is logged, the lease ends it. */
export async function leaveLockSection(section: LockSection): Promise<void> {
  if (!section.owned) return;
  try {
    await section.handle.release();
  } catch (error) {
    logger.warn(
      `Releasing lock "${section.handle.key}" failed; it ends when its lease runs out: ${errorMessage(error)}`,
    );
  }
}

/** What the section resolves to when the lock was not free in time. */
export function lockUnavailable(
  settings: WithLockSettings,
  error: LockAcquireTimeoutError,
  key: string | string[],
  args: readonly unknown[],
): unknown {
  if (settings.onLocked === 'skip') return undefined;
  if (settings.onLocked === 'throw') throw error;
  return settings.onLocked({ key, args, error });
}

/**
 * The whole section for promise-returning callers (`@WithLock`): take the lock, run `body` under
 * it, release. `body`'s result and errors pass through untouched; a sync `body` is fine.
 */
export async function runWithLock<T>(
  locks: LockService,
  key: string | string[],
  settings: WithLockSettings,
  args: readonly unknown[],
  body: () => T,
): Promise<Awaited<T> | unknown> {
  const section = await enterLockSection(locks, key, settings);
  if (section instanceof LockAcquireTimeoutError) return await lockUnavailable(settings, section, key, args);
  try {
    const run = () => runInLockSection(locks, key, settings, section, body);
    const tracing = locks.tracing;
    // A section inside an enclosing hold of the same keys is part of that hold's span.
    if (!tracing?.enabled || !section.owned) return await run();
    const method = settings.location.replace(/^@With\w+ on /, '');
    return await tracing.traceLocked(section.handle, settings.acquire.keyPattern, run, method);
  } finally {
    await leaveLockSection(section);
  }
}

function coveringHandle(locks: LockService, key: string | string[], mode: WithLockMode): LockHandle | undefined {
  const held = sections.getStore()?.get(locks);
  if (!held) return undefined;
  const names = Array.isArray(key) ? [...new Set(key)] : [key];
  const entries = names.map((name) => held.get(name));
  if (!entries.every((e): e is HeldEntry => e !== undefined && covers(e.mode, mode) && e.handle.held)) {
    return undefined;
  }
  if (entries.length === 1) return entries[0].handle;
  return new MultiLockHandle(entries.map((e) => e.handle));
}

function covers(held: WithLockMode, wanted: WithLockMode): boolean {
  return held === wanted || (held === 'write' && wanted === 'read');
}

async function take(locks: LockService, key: string | string[], settings: WithLockSettings): Promise<LockHandle | null> {
  const { acquire, mode } = settings;
  if (mode === 'exclusive') {
    return acquire.waitTimeout === 0 ? locks.tryAcquire(key, acquire) : locks.acquire(key, acquire);
  }
  const { fair: _fair, ...options } = acquire;
  const side = (name: string, sideOptions: Omit<AcquireOptions, 'fair'>) =>
    mode === 'read' ? locks.readWrite(name).read(sideOptions) : locks.readWrite(name).write(sideOptions);
  if (!Array.isArray(key)) return side(key, options);

  // Several read/write locks: in sorted order, all or nothing, as LockService takes several mutexes.
  const names = [...new Set(key)].sort();
  try {
    const parts = await acquireAllOrNothing(names, options.waitTimeout, {
      acquireOne: (name, remaining) => side(name, { ...options, waitTimeout: remaining }),
      releaseUnused: (held) => locks.releaseUnused(held),
    });
    if (!parts) return null;
    return parts.length === 1 ? parts[0] : new MultiLockHandle(parts);
  } catch (error) {
    if (error instanceof LockAcquireTimeoutError) {
      throw new LockAcquireTimeoutError(names, options.waitTimeout ?? error.waitTimeout);
    }
    throw error;
  }
}
