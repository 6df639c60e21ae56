/** A validated lease of `@OnOneInstance` or `@LeaderElection`. Internal. */
export interface LeaseDeclaration {
  /** The lock the lease is held on. */
  readonly key: string;
  /** Lease in ms: renewed every third of it; another instance takes over this long after the holder died. */
  readonly ttl: number;
  /** Where the decorator sits, for messages (`@OnOneInstance on Reports.daily()`). */
  readonly location: string;
}
