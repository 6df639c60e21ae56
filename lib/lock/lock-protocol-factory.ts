import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { UnsupportedInRedlockModeError } from '../core/errors/unsupported-in-redlock-mode.error.js';
import type { LockKeys, RedisKeySpace, SemaphoreKeys } from '../core/keys/redis-key-space.js';
import type { RedisConnection } from '../core/redis/redis-connection.js';
import type { WakeConnectionSource } from './protocols/lock-protocol.interface.js';
import type { ResolvedAcquireOptions } from './interfaces/acquire-options.interface.js';
import { FairLockProtocol } from './kinds/fair/fair.kind.js';
import type { LockProtocol } from './protocols/lock-protocol.interface.js';
import { ReadWriteLockProtocol } from './kinds/read-write/read-write.kind.js';
import { ReentrantLockProtocol } from './kinds/mutex/mutex.kind.js';
import { SemaphoreProtocol } from './kinds/semaphore/semaphore.kind.js';
import { RedlockLockProtocol } from './redlock/redlock-lock.protocol.js';
import type { RedlockMasters } from './redlock/redlock-masters.js';
import type { RedlockQuorum } from './redlock/redlock-quorum.js';

/**
 * The lock kinds of one deployment mode, chosen once when the service starts: on a single Redis
 * (standalone, Sentinel or Cluster) every kind exists; in Redlock mode only the exclusive lock does,
 * and asking for another kind throws `UnsupportedInRedlockModeError`.
 *
 * Every method validates the name (`InvalidLockKeyError`) before anything reaches Redis.
 */
export interface LockProtocolFactory {
  /** Where the shared wake-up subscriber connects: the module's connection, or a fan-out over the masters. */
  readonly wakeConnection: WakeConnectionSource;
  /** The plain or fair exclusive lock on `name`, for one acquire call. */
  exclusive(name: string, options: ResolvedAcquireOptions): LockProtocol;
  /** The two sides of the read/write lock on `name`; each call of the result serves one acquire. */
  readWrite(name: string): (mode: 'read' | 'write') => LockProtocol;
  /** The semaphore of `permits` permits on `name` (`permits` is checked before the name). */
  semaphore(name: string, permits: number): LockProtocol;
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
 * How many recently used lock names keep their exclusive protocols (keys built, name escaped and
 * checked): a name locked again finds them instead of building them anew on every acquire.
 */
const RECENT_LOCK_NAMES = 512;

/** The protocols of one lock name (they hold nothing but its keys, so acquires share them). */
interface NamedProtocols {
  readonly keys: LockKeys;
  plain?: ReentrantLockProtocol;
  fair?: FairLockProtocol;
  read?: ReadWriteLockProtocol;
  write?: ReadWriteLockProtocol;
}

/** The semaphore protocols of one name, by permit count. */
interface NamedSemaphores {
  readonly keys: SemaphoreKeys;
  readonly byPermits: Map<number, SemaphoreProtocol>;
}

/** Remembers `value` under `name`, dropping the name first seen longest ago once `recent` is full. */
function remember<T>(recent: Map<string, T>, name: string, value: T): T {
  if (recent.size >= RECENT_LOCK_NAMES) recent.delete(recent.keys().next().value!);
  recent.set(name, value);
  return value;
}

class SingleRedisProtocols implements LockProtocolFactory {
  /** Lock name -> its protocols, for the RECENT_LOCK_NAMES names first seen most recently (oldest dropped first). */
  private readonly recent = new Map<string, NamedProtocols>();
  /** The same for semaphore names. */
  private readonly recentSemaphores = new Map<string, NamedSemaphores>();

  constructor(
    private readonly keySpace: RedisKeySpace,
    private readonly connection: RedisConnection,
  ) {}

  get wakeConnection(): WakeConnectionSource {
    return this.connection;
  }

  exclusive(name: string, options: ResolvedAcquireOptions): LockProtocol {
    const known = this.named(name);
    if (options.fair) return (known.fair ??= new FairLockProtocol(known.keys, this.connection.publishCommand));
    return (known.plain ??= new ReentrantLockProtocol(known.keys));
  }

  readWrite(name: string): (mode: 'read' | 'write') => LockProtocol {
    const known = this.named(name);
    return (mode) => (mode === 'read' ? (known.read ??= new ReadWriteLockProtocol(known.keys, mode)) : (known.write ??= new ReadWriteLockProtocol(known.keys, mode)));
  }

  semaphore(name: string, permits: number): LockProtocol {
    if (!Number.isInteger(permits) || permits < 1) {
      throw new InvalidOptionsError('permits', `got ${String(permits)}; use a whole number >= 1`);
    }
    const known =
      this.recentSemaphores.get(name) ??
      remember(this.recentSemaphores, name, { keys: this.keySpace.semaphore(name), byPermits: new Map<number, SemaphoreProtocol>() });
    let protocol = known.byPermits.get(permits);
    if (!protocol) {
      if (known.byPermits.size >= 8) known.byPermits.clear(); // one count per name is the rule; keep misuse bounded
      known.byPermits.set(permits, (protocol = new SemaphoreProtocol(known.keys, permits)));
    }
    return protocol;
  }

  /** The protocols of lock `name`; its keys are built (and the name validated) when it is not among the recent ones. */
  private named(name: string): NamedProtocols {
    return this.recent.get(name) ?? remember(this.recent, name, { keys: this.keySpace.lock(name) });
  }

  isLocked(name: string): Promise<boolean> {
    return this.connection.client.exists(this.keySpace.lock(name).owners).then((count) => count === 1);
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

  exclusive(name: string, options: ResolvedAcquireOptions): LockProtocol {
    return RedlockLockProtocol.forAcquire(this.keySpace.lock(name), this.quorum, options);
  }

  readWrite(): never {
    throw new UnsupportedInRedlockModeError('readWrite');
  }

  semaphore(): never {
    throw new UnsupportedInRedlockModeError('semaphore');
  }

  isLocked(name: string): Promise<boolean> {
    return this.quorum.isLocked(this.keySpace.lock(name).owners);
  }
}
