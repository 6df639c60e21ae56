import type { BlockingReader, RedisTransport } from '../../core/redis/redis-transport.js';

/** How a blocking wait on the marker ended. */
export type MarkerOutcome = 'popped' | 'timeout' | 'lost';

/** Extra time a blocking reply may take beyond its own timeout before the connection counts as hung. */
const HANG_GRACE_MS = 1_500;

/**
 * One consumer's dedicated blocking connection, parked on `BZPOPMIN marker` so that a producer's
 * "earlier job" marker wakes it at once.
 *
 * The connection is never trusted across a failure. When it closes (Redis restarted, network cut),
 * ioredis would reconnect and silently re-send the old BZPOPMIN with its old timeout; and a
 * connection that died without closing (half-open TCP, a proxy that stopped forwarding) would never
 * answer at all. Either way the consumer would sleep through due jobs until a new job arrived (the
 * BullMQ late-job bug). So: on 'close', or when no reply came within the block time plus a grace,
 * the connection is dropped and the consumer told ('lost'); the next wait opens a fresh one.
 */
export class MarkerWaiter {
  private conn?: BlockingReader;
  private inFlight = false;
  private closed = false;
  /** Waits in a row that ended with the connection lost; spaces out reopening so a broken setup cannot spin. */
  private lostStreak = 0;
  private reopenTimer?: NodeJS.Timeout;
  /** Connections opened so far, for diagnostics and tests. */
  connectionsOpened = 0;

  constructor(
    private readonly connection: Pick<RedisTransport, 'openBlockingReader'>,
    private readonly markerKey: string,
    private readonly purpose: string,
    private readonly blockMs: number,
    private readonly onReturn: (outcome: MarkerOutcome) => void,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Parks on the marker unless a wait is already outstanding; the outcome is reported through `onReturn`. */
  ensureWaiting(): void {
    if (this.inFlight || this.closed || this.reopenTimer) return;
    if (!this.conn && this.lostStreak > 1) {
      // Lost again right after reopening: back off (the consumer's due-time timer keeps working meanwhile).
      const delay = Math.min(5_000, 100 * 2 ** Math.min(6, this.lostStreak - 2));
      this.reopenTimer = setTimeout(() => {
        this.reopenTimer = undefined;
        this.ensureWaiting();
      }, delay);
      this.reopenTimer.unref();
      return;
    }
    const conn = (this.conn ??= this.open());
    this.inFlight = true;
    let settled = false;
    const settle = (outcome: MarkerOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(hangTimer);
      stopListening();
      if (outcome === 'lost') {
        this.lostStreak++;
        this.drop(conn);
      } else {
        this.lostStreak = 0;
      }
      this.inFlight = false;
      if (!this.closed) this.onReturn(outcome);
    };
    const onClose = () => settle('lost');
    const hangTimer = setTimeout(() => settle('lost'), this.blockMs + HANG_GRACE_MS);
    hangTimer.unref();
    const stopListening = conn.onLost(onClose);
    conn
      .popMin(this.markerKey, this.blockMs)
      .then(
        (popped) => settle(popped ? 'popped' : 'timeout'),
        (error: unknown) => {
          // A closed connection is reported through 'close'; anything else (e.g. an ACL refusal) is worth a log line.
          if (!settled && !this.closed) this.onError(error);
          settle('lost');
        },
      )
      .catch((error: unknown) => this.onError(error));
  }

  /** Drops the connection at once (an outstanding BZPOPMIN is abandoned, never reported). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reopenTimer);
    const conn = this.conn;
    this.conn = undefined;
    if (conn) await conn.close();
  }

  private open(): BlockingReader {
    this.connectionsOpened++;
    return this.connection.openBlockingReader(this.purpose);
  }

  private drop(conn: BlockingReader): void {
    if (this.conn === conn) this.conn = undefined;
    void conn.close().catch(() => undefined);
  }
}
