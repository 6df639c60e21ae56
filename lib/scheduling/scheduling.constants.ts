/** Metadata on an `@OnOneInstance` method (the wrapper function): its resolved declaration. */
export const ON_ONE_INSTANCE_METADATA = 'nestjs-redis-lock:on_one_instance';

/** Metadata on a `@LeaderElection` class: its resolved declaration. */
export const LEADER_ELECTION_METADATA = 'nestjs-redis-lock:leader_election';

/**
 * Longest a clean shutdown waits, after this instance's last `@OnOneInstance` call, before handing
 * the lease back: the same tick fires on the other instances within their timer skew, and must find
 * the lease still held (see `OneInstanceLeases.handBack`).
 */
export const MAX_HANDOVER_GUARD_MS = 1_000;

/** One wait of a campaigning instance for the leader's lock; it is woken at once by a release. */
export const CAMPAIGN_WAIT_MS = 300_000;
