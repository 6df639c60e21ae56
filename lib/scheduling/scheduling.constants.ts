/**
 * Instance property through which Nest injects the `OneInstanceLeases` that `@OnOneInstance` methods
 * use. Internal. Its description is what Nest's error names when the class's module cannot see `RedisLockModule`.
 */
export const ONE_INSTANCE_LEASES_PROPERTY = Symbol(
  '@OnOneInstance needs RedisLockModule: register RedisLockModule.forRoot({ isGlobal: true, ... }) (or forRootAsync) in the root module, ' +
    'or import here a module of yours that imports RedisLockModule.forRoot(...) and exports RedisLockModule',
);

/** Metadata on an `@OnOneInstance` method (the wrapper function): its resolved declaration. */
export const ON_ONE_INSTANCE_METADATA = 'nestjs-redis-lock:on_one_instance';

/** Metadata on a `@LeaderElection` class: its resolved declaration. */
export const LEADER_ELECTION_METADATA = 'nestjs-redis-lock:leader_election';

/** Lease of `@OnOneInstance` and `@LeaderElection` when `ttl` is not given (the module's default lock lease). */
export const DEFAULT_LEASE_TTL_MS = 30_000;

/** Shortest `ttl` accepted: the lease is renewed every third of it, and a loaded event loop needs slack. */
export const MIN_LEASE_TTL_MS = 100;

/**
 * Longest a clean shutdown waits, after this instance's last `@OnOneInstance` call, before handing
 * the lease back: the same tick fires on the other instances within their timer skew, and must find
 * the lease still held (see `OneInstanceLeases.handBack`).
 */
export const MAX_HANDOVER_GUARD_MS = 1_000;

/** One wait of a campaigning instance for the leader's lock; it is woken at once by a release. */
export const CAMPAIGN_WAIT_MS = 300_000;
