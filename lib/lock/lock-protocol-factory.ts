import { UnsupportedInRedlockModeError } from '../core/errors/unsupported-in-redlock-mode.error.js';
import type { RedisKeySpace } from '../core/keys/redis-key-space.js';
import type { RedisConnection } from '../core/connection/redis-connection.js';
import type { ResolvedAcquireOptions } from './interfaces/acquire-options.interface.js';
import type { LockKindContext, LockKindDefinition } from './protocols/lock-kind.js';
import type { LockProtocol, WakeConnectionSource } from './protocols/lock-protocol.interface.js';
import { RedlockLockProtocol } from './redlock/redlock-lock.protocol.js';
import type { RedlockMasters } from './redlock/redlock-masters.js';
import type { RedlockQuorum } from './redlock/redlock-quorum.js';

/**
 * The protocols of the lock kinds for one deployment mode, chosen once when the service starts: on
 * a single Redis (standalone, Sentinel or Cluster) every kind exists; in Redlock mode only the kinds
 * whose entry says `redlock: 'quorum'` do, and asking for another throws `UnsupportedInRedlockModeError`.
 *
 * `of` checks the variant, then the name (`InvalidLockKeyError`), before anything reaches Redis.
 */
export interface LockProtocolFactory {
  /** Where the shared wake-up subscriber connects: the module's connection, or a fan-out over the masters. */
  readonly wakeConnection: WakeConnectionSource;
  /** The protocol of lock `name` of `kind` and `variant`, for one acquire call (`options`: that call's). */
  of<V>(kind: LockKindDefinition<V>, name: string, variant: V, options?: ResolvedAcquireOptions): LockProtocol;
  /**
   * Whether the lock `name` (plain, fair or read/write) is held: its owner hash exists (in Redlock
   * mode: on a majority of masters). An invalid name throws synchronously, before the promise.
   */
  isLocked(name: string): Promise<boolean>;
}

/** The factory for the module's mode: Redlock when masters are configured, else the single Redis. */
export function lockProtocolFactory(keySpace: RedisKeySpace, connection: RedisConnection, masters: RedlockMasters): LockProtocolFactory {
  return masters.quorum ? new RedlockProtocols(keySpace, masters.quorum, masters) : new SingleRedisProtocols(keySpace, connection);
}

/**
 * How many recently used lock names keep their protocols (keys built, name escaped and checked): a
 * name locked again finds them instead of building them anew on every acquire.
 */
const RECENT_LOCK_NAMES = 512;

/** Most protocols kept per name (one per kind and variant): one permit count per semaphore is the rule; misuse stays bounded. */
const PROTOCOLS_PER_NAME = 16;

/** The protocols of one lock name: kind -> (variant -> protocol). They hold nothing but keys, so acquires share them. */
type NamedProtocols = Map<LockKindDefinition<never>, Map<unknown, LockProtocol>>;

class SingleRedisProtocols implements LockProtocolFactory {
  /** Lock name -> its protocols, for the RECENT_LOCK_NAMES names first seen most recently (oldest dropped first). */
  private readonly recent = new Map<string, NamedProtocols>();
  private readonly context: LockKindContext;

  constructor(
    private readonly keySpace: RedisKeySpace,
    private readonly connection: RedisConnection,
  ) {
    this.context = { keySpace };
  }

  get wakeConnection(): WakeConnectionSource {
    return this.connection;
  }

  of<V>(kind: LockKindDefinition<V>, name: string, variant: V): LockProtocol {
    let named = this.recent.get(name);
    let byVariant = named?.get(kind as LockKindDefinition<never>);
    const known = byVariant?.get(variant);
    if (known) return known;
    kind.checkVariant?.(variant);
    const protocol = kind.protocol(name, variant, this.context);
    if (!named) {
      if (this.recent.size >= RECENT_LOCK_NAMES) this.recent.delete(this.recent.keys().next().value!);
      this.recent.set(name, (named = new Map()));
    }
    if (!byVariant) named.set(kind as LockKindDefinition<never>, (byVariant = new Map()));
    if (byVariant.size >= PROTOCOLS_PER_NAME) byVariant.clear();
    byVariant.set(variant, protocol);
    return protocol;
  }

  isLocked(name: string): Promise<boolean> {
    return this.connection.command<number>('exists', this.keySpace.lock(name).owners).then((count) => count === 1);
  }
}

class RedlockProtocols implements LockProtocolFactory {
  readonly wakeConnection: WakeConnectionSource;

  constructor(
    private readonly keySpace: RedisKeySpace,
    private readonly quorum: RedlockQuorum,
    masters: RedlockMasters,
  ) {
    this.wakeConnection = masters.wakeConnection();
  }

  /** A protocol per acquire call: a Redlock acquire remembers its tries (see RedlockLockProtocol). */
  of<V>(kind: LockKindDefinition<V>, name: string, _variant: V, options?: ResolvedAcquireOptions): LockProtocol {
    if (kind.redlock !== 'quorum') throw new UnsupportedInRedlockModeError(kind.name, kind.redlock.described);
    return RedlockLockProtocol.forAcquire(this.keySpace.lock(name), this.quorum, options);
  }

  isLocked(name: string): Promise<boolean> {
    return this.quorum.isLocked(this.keySpace.lock(name).owners);
  }
}
