import type { RedisConnection } from '../../core/connection/redis-connection.js';

/** At most this many keys in one DEL. */
const DELETE_BATCH = 1_000;

/**
 * Operation records whose call has been answered (see operation-record.ts): no re-send can follow,
 * so they are deleted, without holding up the caller, all of one shard in one DEL on the next turn
 * of the event loop (the calls answered in one turn, as many concurrent schedule calls are, share
 * it). A DEL that fails leaves its records to expire on their own (OPERATION_RECORD_TTL_MS). At
 * shutdown, `sendNow()` sends what is pending before the connection closes.
 */
export class AnsweredRecords {
  /** Records to delete, by the jobs key of their shard (every key of a shard shares its cluster slot). */
  private readonly pending = new Map<string, string[]>();
  private sweepQueued = false;

  constructor(private readonly connection: RedisConnection) {}

  /** Deletes `records` of the shard whose jobs hash is `jobsKey`, soon. Never throws nor rejects. */
  drop(jobsKey: string, records: readonly string[]): void {
    if (records.length === 0) return;
    const shard = this.pending.get(jobsKey);
    if (shard) shard.push(...records);
    else this.pending.set(jobsKey, [...records]);
    if (this.sweepQueued) return;
    this.sweepQueued = true;
    setImmediate(() => this.sweep());
  }

  /** Sends the pending deletes now (at shutdown: before the connection's QUIT, which Redis runs after them). */
  sendNow(): void {
    this.sweep();
  }

  private sweep(): void {
    this.sweepQueued = false;
    for (const records of this.pending.values()) {
      for (let from = 0; from < records.length; from += DELETE_BATCH) {
        this.connection.command('del', ...records.slice(from, from + DELETE_BATCH)).catch(() => undefined);
      }
    }
    this.pending.clear();
  }
}
