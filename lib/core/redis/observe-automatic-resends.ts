import type { Redis } from 'ioredis';
import { useCommandHook } from './ioredis-command-hooks.js';

/** The commands ioredis sends by itself when a connection is ready again, its promise unobserved. */
const RESENT_BY_THE_CLIENT = new Set(['subscribe', 'psubscribe', 'ssubscribe', 'select']);

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
  useCommandHook(client, 'observe-resends', (next) => (command, stream) => {
    if (RESENT_BY_THE_CLIENT.has(command.name)) command.promise.catch(() => undefined);
    return next(command, stream);
  });
}
