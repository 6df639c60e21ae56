import type { RedisConnectionError } from '../../errors/redis-connection.error.js';
import { connectionFailureError } from '../redis-errors.js';
import { RESP2_COMMAND_OPTIONS } from './node-redis-replies.js';
import type { NodeRedisCommandOptions } from './node-redis-types.js';

/** A connection whose readiness and errors can be watched (a node-redis client or cluster). */
interface Watched {
  readonly isReady: boolean;
  on(event: string, listener: (error: Error) => void): unknown;
  off(event: string, listener: (error: Error) => void): unknown;
}

/**
 * Bounds how long a command waits for a node-redis connection that is down. node-redis keeps a
 * command sent while it reconnects in its offline queue until the connection is back, however long
 * that takes; a command already written when the socket drops is rejected at once (never re-sent).
 * So only the queued ones need a bound: each gets an abort signal that fires `bound` ms after the
 * connection went down (or after the command, for a connection not ready yet), and node-redis drops
 * an aborted command from its queue before it is ever written. Once the connection has been down
 * for the bound, commands fail at once, naming the last connection error, until it is ready again.
 */
export class NodeRedisOutageBound {
  /** Monotonic ms when the connection was lost; undefined while it is ready (or was never lost). */
  private downSince: number | undefined;
  private lastError: Error | undefined;
  private readonly onError = (error: Error): void => {
    this.lastError = error;
    this.downSince ??= performance.now();
  };
  private readonly onReady = (): void => {
    this.downSince = undefined;
  };

  constructor(
    private readonly connection: Watched,
    private readonly endpoint: string,
    /** ms; undefined: no bound (the user's own client, or `unreachableTimeout: false`). */
    readonly bound: number | undefined,
    /** The events that report a connection error and readiness: a cluster's are 'node-error' and 'connect'. */
    private readonly events: { readonly error: string; readonly ready: string } = { error: 'error', ready: 'ready' },
  ) {
    connection.on(events.error, this.onError);
    connection.on(events.ready, this.onReady);
  }

  /** The last connection error, if any since the start. */
  get cause(): Error | undefined {
    return this.lastError;
  }

  /**
   * The options of a command sent now: the RESP2 decoding, and an abort signal when the connection
   * is not ready. Throws the failure at once when it has been down for longer than the bound.
   */
  commandOptions(action: string): NodeRedisCommandOptions {
    if (this.connection.isReady || this.bound === undefined) return RESP2_COMMAND_OPTIONS;
    const now = performance.now();
    const remaining = this.bound - (now - (this.downSince ?? now));
    if (remaining <= 0) throw this.failure(action);
    return { ...RESP2_COMMAND_OPTIONS, abortSignal: AbortSignal.timeout(Math.ceil(remaining)) };
  }

  /** The error a command aborted by the bound (or refused while down) fails with. */
  failure(action: string): RedisConnectionError {
    const downForMs = this.downSince === undefined ? undefined : Math.round(performance.now() - this.downSince);
    return connectionFailureError(this.endpoint, this.lastError, { action, downForMs });
  }

  stop(): void {
    this.connection.off(this.events.error, this.onError);
    this.connection.off(this.events.ready, this.onReady);
  }
}

/** Whether `error` is node-redis' rejection of a command whose abort signal fired before it was written. */
export function isAbortedCommand(error: unknown): boolean {
  return typeof error === 'object' && error !== null && error.constructor.name === 'AbortError';
}
