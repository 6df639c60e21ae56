import type { RedisKeySpace } from '../../core/keys/redis-key-space.js';
import type { RedisTransport } from '../../core/redis/redis-transport.js';
import type { RedisScript } from '../../core/redis/redis-script.js';
import type { HeldLock } from '../interfaces/held-lock.interface.js';
import type { LockProtocol } from './lock-protocol.interface.js';

/** What a kind needs to build the protocol of one of its locks. */
export interface LockKindContext {
  readonly keySpace: RedisKeySpace;
}

/** How the inspector finds and reads the locks of the key family a kind owns. */
export interface LockKindInspection {
  /** SCAN MATCH pattern of the one key each lock of the family has (its owner hash, its permit set). */
  pattern(keySpace: RedisKeySpace): string;
  /** The lock name in a key the scan found; undefined for any other key. */
  nameOf(keySpace: RedisKeySpace, key: string): string | undefined;
  /** The lock `name` as held now (one script call); undefined when nobody holds it. */
  read(redis: Pick<RedisTransport, 'runScript'>, keySpace: RedisKeySpace, name: string): Promise<HeldLock | undefined>;
}

/**
 * One kind of lock, all of it in one entry: its protocol, its keys (built by `RedisKeySpace` in
 * `protocol`), its scripts (preloaded at bootstrap), whether Redlock mode has it, and how the
 * inspector reads its locks. The list of every kind is `LOCK_KINDS` (kinds/all-lock-kinds.ts); each
 * entry lives in its kind's folder (`kinds/<kind>/<kind>.kind.ts`) next to its scripts.
 *
 * `Variant` is what a caller chooses per lock besides its name (a read/write side, a permit count).
 */
export interface LockKindDefinition<Variant = undefined> {
  /**
   * The kind's one name wherever a kind is named: spans (`lock.kind`, where a read/write lock names
   * its side), the inspector, errors (`UnsupportedInRedlockModeError.feature`). Lower case, dashed.
   */
  readonly name: string;
  /** Every script the kind runs (its folder's `*.lua.ts`), for preloading. */
  readonly scripts: readonly RedisScript[];
  /**
   * In Redlock mode the kind is taken on a quorum of masters (`'quorum'`), or refused with
   * `UnsupportedInRedlockModeError` naming it as `described` ("A semaphore (`semaphore()`)").
   */
  readonly redlock: 'quorum' | { readonly described: string };
  /** The inspector's query, for a kind that owns its key family (kinds sharing one leave it to its owner). */
  readonly inspection?: LockKindInspection;
  /** Throws for a variant the kind refuses (`InvalidOptionsError`), before the name is checked. */
  checkVariant?(variant: Variant): void;
  /**
   * The protocol of lock `name` of this kind and variant; it builds the keys, which checks the name
   * (`InvalidLockKeyError`). Protocols hold nothing but keys: the service shares one per lock.
   */
  protocol(name: string, variant: Variant, context: LockKindContext): LockProtocol;
}
