/** Counters of one process's outbox traffic, for metrics. */
export interface OutboxRelayStats {
  /** Rows written to Redis and deleted, since start (after-commit and relay). */
  readonly relayed: number;
  /** Of those, rows found left behind by the relay (another process crashed, or Redis was down). */
  readonly relayedLeftBehind: number;
  /** Rows parked as impossible to relay. */
  readonly parked: number;
  /** Rows of this process's committed transactions whose write is still going. */
  readonly inFlight: number;
  /** Consecutive failed looks of the relay (0 when healthy). */
  readonly failureStreak: number;
}
