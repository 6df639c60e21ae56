import type { GlideCommandClient } from './glide-package.js';
import { glidePackage } from './glide-package.js';

/*
 * The only file that reaches past GLIDE 2.5's documented surface, on clients this module built
 * (never a user's): the socket to GLIDE's core, and its push-notification decoding.
 */

interface ClientInternals {
  /** The Unix socket to GLIDE's core (`BaseClient.socket`). */
  socket?: { destroy(): void };
  notificationToPubSubMessageSafe?: (push: { respPointer?: number | { toNumber(): number } | null }) => unknown;
}

/**
 * Closes a client at once, even with a command blocked on it: GLIDE's close() rejects what is
 * pending and only half-closes its socket to the core, which then stays open (and keeps the process
 * alive) until a blocked BZPOPMIN or WAIT answers; destroying the socket ends it now.
 */
export function cutClient(client: GlideCommandClient): void {
  try {
    client.close();
  } finally {
    (client as unknown as ClientInternals).socket?.destroy();
  }
}

/** A push from the server, decoded: its kind (`Message`, `SMessage`, `Subscribe`, `SSubscribe`, …) and values. */
export interface GlidePush {
  readonly kind: string;
  readonly values: unknown[];
}

/**
 * Routes every push notification of `client` (a pub/sub client built with a callback) to `onPush`,
 * the subscription confirmations included: GLIDE passes only messages to its callback, and after a
 * reconnect it subscribes again by itself, which the confirmations are the only sign of.
 */
export function interceptPushes(client: GlideCommandClient, onPush: (push: GlidePush) => void): void {
  const valueFromPointer = glidePackage().valueFromPointer;
  (client as unknown as ClientInternals).notificationToPubSubMessageSafe = (push) => {
    const pointer = push.respPointer;
    if (pointer === null || pointer === undefined) return null;
    const decoded = valueFromPointer(typeof pointer === 'number' ? pointer : pointer.toNumber(), true) as Partial<GlidePush>;
    if (typeof decoded?.kind === 'string') onPush({ kind: decoded.kind, values: Array.isArray(decoded.values) ? decoded.values : [] });
    return null;
  };
}

/** GLIDE's default `inflightRequestsLimit`. */
const DEFAULT_INFLIGHT_LIMIT = 1000;

/** The in-flight request limit `client` was configured with (GLIDE keeps its configuration in `BaseClient.config`). */
export function inflightLimitOf(client: GlideCommandClient): number {
  const limit = (client as unknown as { config?: { inflightRequestsLimit?: unknown } }).config?.inflightRequestsLimit;
  return typeof limit === 'number' && limit > 0 ? limit : DEFAULT_INFLIGHT_LIMIT;
}
