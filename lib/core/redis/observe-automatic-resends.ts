import type { Redis } from 'ioredis';
import { processShared } from '../runtime/process-shared.js';

/** The commands ioredis sends by itself when a connection is ready again, its promise unobserved. */
const RESENT_BY_THE_CLIENT = new Set(['subscribe', 'psubscribe', 'ssubscribe', 'select']);

interface SentCommand {
  readonly name: string;
  readonly promise: Promise<unknown>;
}
interface SendingClient {
  sendCommand(command: SentCommand, stream?: unknown): unknown;
}

/** Clients already observed (one per process, shared by both builds: core/runtime/process-shared.ts). */
const observed = processShared('resends-observed', () => new WeakSet<object>());

/**
 * After a reconnect ioredis restores the connection's state by sending SELECT and the (P|S)SUBSCRIBE
 * of its channels itself (`autoResubscribe`), and nobody holds those commands' promises. A
 * connection closed before Redis answers them (the application closes right after Redis came
 * back, or it is lost again) rejects them with "Connection is closed.": an unhandled rejection.
 * Every such command sent on `client` gets a handler that ignores the rejection: the state they
 * restore goes with the connection, and a caller of ours that sends one awaits its own promise,
 * which still rejects for it. Idempotent per client.
 */
export function observeAutomaticResends(client: Redis): void {
  if (observed.has(client)) return;
  observed.add(client);
  const internals = client as unknown as SendingClient;
  const send = internals.sendCommand;
  internals.sendCommand = (command, stream) => {
    if (RESENT_BY_THE_CLIENT.has(command.name)) command.promise.catch(() => undefined);
    return send.call(client, command, stream);
  };
}
