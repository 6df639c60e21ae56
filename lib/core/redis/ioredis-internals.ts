import type { Cluster, Redis } from 'ioredis';

/*
 * The one file that knows ioredis' private fields (ioredis 5 and 6: `sendCommand`, `commandQueue`,
 * `prevCommandQueue`, `flushQueue`, `setStatus`, `stream`). Everything else reaches them through
 * the functions below, so an ioredis upgrade that moves one is a change here and in its spec
 * (test/faults/*, test/redis/coalesced-writes.spec.ts), nowhere else.
 */

/** A command as ioredis queues it: its promise, and how to settle it from outside. */
export interface QueuedCommand {
  readonly name: string;
  readonly promise: Promise<unknown>;
  reject(error: Error): void;
}

/** ioredis' `sendCommand(command, stream?)`: writes the command, or queues it while the connection is not ready. */
export type SendCommand = (command: QueuedCommand, stream?: unknown) => unknown;

/** A socket ioredis writes on; cork/uncork group the writes of one turn. */
export interface ClientSocket {
  readonly writable?: boolean;
  cork(): void;
  uncork(): void;
  destroy(): void;
  on(event: 'data', listener: () => void): unknown;
}

interface ClientInternals {
  sendCommand: SendCommand;
  readonly stream?: ClientSocket;
  setStatus(status: string): void;
  flushQueue(error: Error, options?: { offlineQueue?: boolean; commandQueue?: boolean }): void;
  readonly commandQueue?: { readonly length: number; toArray(): Array<{ command: QueuedCommand }> };
  prevCommandQueue?: { shift(): { command: QueuedCommand } | undefined } | null;
}

const internals = (client: Redis) => client as unknown as ClientInternals;

/** The client's current `sendCommand` (its own, or the hook chain's: see ioredis-command-hooks.ts). */
export function sendCommandOf(client: Redis): SendCommand {
  return internals(client).sendCommand;
}

/** Replaces the client's `sendCommand`; only the hook chain calls this. */
export function replaceSendCommand(client: Redis, send: SendCommand): void {
  internals(client).sendCommand = send;
}

/** The socket of the current connection, if one is open. */
export function socketOf(client: Redis): ClientSocket | undefined {
  return internals(client).stream;
}

/**
 * Commands written on the current connection whose replies have not come yet; undefined when the
 * client keeps no such queue (a Cluster).
 */
export function awaitingReplies(client: Redis): number | undefined {
  return internals(client).commandQueue?.length;
}

/** Rejects the commands awaiting replies where they stand: they stay queued, so replies still coming are matched to them and dropped. */
export function rejectAwaitingReplies(client: Redis, error: Error): void {
  for (const item of internals(client).commandQueue?.toArray() ?? []) item.command.reject(error);
}

/**
 * Rejects and removes the commands queued while the connection was not ready (`offline`) and, with
 * `sent`, those written on it and awaiting replies (which ioredis would re-send after a reconnect).
 */
export function flushQueues(client: Redis, error: Error, which: { readonly sent: boolean }): void {
  internals(client).flushQueue(error, { offlineQueue: true, commandQueue: which.sent });
}

/**
 * Rejects and removes the commands a dropped connection cut off, kept for a re-send while a new
 * connection shakes hands (ioredis' `prevCommandQueue`).
 */
export function rejectCutOff(client: Redis, error: Error): void {
  const previous = internals(client).prevCommandQueue;
  if (!previous) return;
  for (let item = previous.shift(); item; item = previous.shift()) item.command.reject(error);
}

/**
 * Ends a client the way ioredis' own close handler does: status 'end', its queues failed with
 * "Connection is closed.". For a client waiting to reconnect, which has no socket whose close would end it.
 */
export function endClient(client: Redis): void {
  internals(client).setStatus('end');
  internals(client).flushQueue(new Error('Connection is closed.'));
}

/** A cluster's seed nodes as given to its constructor (private `startupNodes`; a port, a URL or `{ host, port }` each). */
export function startupNodesOf(cluster: Cluster): ReadonlyArray<string | number | { host?: string; port?: number }> {
  return (cluster as unknown as { startupNodes?: Array<string | number | { host?: string; port?: number }> }).startupNodes ?? [];
}
