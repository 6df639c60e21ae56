/**
 * What makes a late write of an outbox row change nothing. A write is made under a claim of the row
 * and carries a deadline on the Redis server's clock that ends before any other relay can claim the
 * row; the script refuses it once the server's clock has passed the deadline (a write held by a
 * stalled link, or re-sent after a reconnection). The row's operation record (`recordId`), checked
 * and set by the same script as the change, makes a second write inside its deadline a no-op.
 */
export interface WriteFence {
  /** The operation id of the row's record (`outbox:<row id>`), in the shard the write changes. */
  readonly recordId: string;
  /** The last ms of the Redis server's clock at which the write may still change anything. */
  readonly deadline: number;
}
