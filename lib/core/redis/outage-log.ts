import type { Logger } from '@nestjs/common';
import { RedisConnectionError } from '../errors/redis-connection.error.js';

/**
 * How long after an outage ended a connection failure still counts as part of it: calls rejected
 * while Redis was out of reach settle, and their callers report them, a little after it is back
 * (a retry's backoff, a renewal beat).
 */
const AFTERMATH_MS = 5_000;

/**
 * How long a connection error waits, while no outage is known, to see whether the command
 * connection is down too (then an outage begins) or only that connection had a hiccup.
 */
const SETTLE_MS = 100;

/** Hiccups of single connections (the command connection up) are logged at most this often. */
const HICCUP_LOG_INTERVAL_MS = 1_000;

/** Whether `error` says a Redis connection failed (rather than a command: a script error, WRONGTYPE, a bug). */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof RedisConnectionError) return true;
  if (!(error instanceof Error)) return false;
  // What ioredis rejects commands with when their connection is lost or gives up.
  return (
    error.name === 'MaxRetriesPerRequestError' ||
    /^Connection is closed\.?$/.test(error.message) ||
    /^Stream isn't writeable/.test(error.message)
  );
}

/** What the outage log needs to know of the command connection. */
export interface OutageLogSource {
  /** `host:port` (or the cluster's nodes), for the messages. */
  readonly endpoint: string;
  /** Whether the command connection is down now (lost, and not ready again). */
  isDown(): boolean;
  /** How long a command waits for an unreachable Redis before failing (`unreachableTimeout`), when bounded. */
  readonly waitBound?: number;
}

interface Outage {
  /** Monotonic ms the outage began. */
  readonly since: number;
  /** What was counted meanwhile, by what it was (`consumer calls retried` → 12), in first-seen order. */
  readonly counts: Map<string, number>;
}

/**
 * The log of Redis outages of one module connection: one WARN when Redis becomes unreachable
 * (where, and why: the connection's own error), one LOG when it is reachable again (after how
 * long, and how many calls failed or were skipped meanwhile, by what made them). In between, the
 * module's components report their failed calls here instead of warning each on its own: a call
 * that failed to reach Redis during a known outage is counted for the summary and not printed (not
 * even at debug level, which Nest's default logger shows). A failure that is not a connection failure (a script error, WRONGTYPE, a bug),
 * or one with
 * no outage known, is the caller's to log as before (`absorb` returns false).
 *
 * Invariants: at most one outage is open at a time; the WARN and the LOG come in pairs, the LOG
 * only after its WARN; nothing here changes what events or metrics report.
 */
export class RedisOutageLog {
  private outage?: Outage;
  /** Monotonic ms the last outage ended. */
  private endedAt = Number.NEGATIVE_INFINITY;
  /** A connection error waiting `SETTLE_MS` to be told apart: an outage's start, or one connection's hiccup. */
  private settling?: { readonly timer: NodeJS.Timeout; readonly purpose: string; readonly error: Error };
  private lastHiccupLog = Number.NEGATIVE_INFINITY;
  /**
   * Whether the module got past its bootstrap check: before, an unreachable Redis is the bootstrap's
   * error to report (it fails with RedisConnectionError), and no outage is opened or logged.
   */
  private started = false;

  constructor(
    private readonly logger: Logger,
    private readonly source: OutageLogSource,
  ) {}

  /** Whether an outage is known now: Redis was found unreachable and is not back yet. */
  get active(): boolean {
    return this.outage !== undefined;
  }

  /**
   * A connection `error` event of one of the module's connections (`purpose`: commands, a
   * subscriber, a blocking reader). `warnAlone`: log a hiccup of this connection alone (off for a
   * client the application passed in, whose errors are its own to log).
   */
  connectionError(purpose: string, error: Error, warnAlone = true): void {
    if (this.outage) return this.count('connection errors');
    if (this.source.isDown()) return this.begin(error.message);
    // The command connection still counts as up: that connection alone, or the first sign of an
    // outage the command connection has not noticed yet (its socket closes a moment later).
    if (this.settling) return;
    const timer = setTimeout(() => {
      this.settling = undefined;
      if (this.outage) return this.count('connection errors');
      if (this.source.isDown()) return this.begin(error.message);
      if (!warnAlone) return;
      const now = performance.now();
      if (now - this.lastHiccupLog < HICCUP_LOG_INTERVAL_MS) {
        this.logger.debug(`Redis ${purpose} connection error (${this.source.endpoint}): ${error.message}`);
        return;
      }
      this.lastHiccupLog = now;
      this.logger.warn(`Redis ${purpose} connection error (${this.source.endpoint}): ${error.message}`);
    }, SETTLE_MS);
    timer.unref();
    this.settling = { timer, purpose, error };
  }

  /** The command connection became unreachable (lost past the bound, or silent): `cause` in words. */
  unreachable(cause: string | undefined): void {
    if (!this.outage) this.begin(cause ?? 'the connection is down');
  }

  /** The command connection is ready again: ends the outage, if one is known, with its summary. */
  reachable(): void {
    const outage = this.outage;
    if (!outage) return;
    this.outage = undefined;
    this.endedAt = performance.now();
    const seconds = ((this.endedAt - outage.since) / 1000).toFixed(1);
    const counted = [...outage.counts].map(([what, n]) => `${what}: ${n}`).join(', ');
    this.logger.log(
      `Redis at ${this.source.endpoint} is reachable again after ${seconds} s` +
        (counted ? `; meanwhile (retried or skipped; events and metrics have each): ${counted}.` : '.'),
    );
  }

  /**
   * A call that failed to reach Redis, reported by `what` it was (`'consumer calls retried'`,
   * `'lease renewals failed'`...): counted into the known outage, not printed, and true. False when the caller must log it itself: it is
   * not a connection failure, or
   * no outage is known (and none ended moments ago).
   */
  absorb(what: string, error: unknown): boolean {
    if (!isConnectionFailure(error)) return false;
    if (!this.outage && performance.now() - this.endedAt > AFTERMATH_MS) return false;
    this.count(what);
    return true;
  }

  /** Counts something that did not happen because Redis is out of reach, if an outage is known; true if one is. */
  skipped(what: string): boolean {
    if (!this.outage) return false;
    this.count(what);
    return true;
  }

  /** The module's bootstrap check passed (or was skipped): outages are logged from now on. */
  start(): void {
    this.started = true;
  }

  /** Stops the pending check of a connection error (the module is closing). */
  stop(): void {
    if (this.settling) clearTimeout(this.settling.timer);
    this.settling = undefined;
  }

  private begin(cause: string): void {
    if (this.settling) clearTimeout(this.settling.timer);
    this.settling = undefined;
    if (!this.started) return;
    this.outage = { since: performance.now(), counts: new Map() };
    const bound = this.source.waitBound;
    const calls =
      bound === undefined
        ? 'Calls wait for it or fail with RedisConnectionError'
        : `Calls wait up to ${bound} ms, then fail with RedisConnectionError until it is back`;
    this.logger.warn(
      `Redis at ${this.source.endpoint} is unreachable: ${cause.replace(/\.+$/, '')}. ${calls}; the module retries its own work ` +
        'and says when Redis is back, with what failed meanwhile.',
    );
  }

  /**
   * Counts a failure of the known outage for its summary, printing nothing, not even at debug level:
   * Nest's default logger prints debug, and an outage must read as a few lines there too. Events and
   * metrics keep every failure.
   */
  private count(what: string): void {
    const counts = this.outage?.counts;
    if (counts) counts.set(what, (counts.get(what) ?? 0) + 1);
  }
}
