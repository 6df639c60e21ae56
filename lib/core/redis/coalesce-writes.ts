import type { Cluster, Redis } from 'ioredis';
import { processShared } from '../runtime/process-shared.js';
import { useCommandHook } from './ioredis-command-hooks.js';
import { socketOf, type ClientSocket } from './ioredis-internals.js';

/**
 * Most commands one write carries: a turn with more leaves in several writes, so Redis starts on the
 * first ones while this process still issues the rest, and the two overlap instead of taking turns
 * (hot-path bench, 64 callers: 1.5–1.7× redis-semaphore's cycles/s with 16, 0.9–1.1× with the whole
 * turn in one write; 8 costs more CPU per cycle, 32 overlaps less).
 */
export const COMMANDS_PER_WRITE = 16;

/** Each coalescing client's "write what this turn has corked now" (one per process, shared by both builds:
 * core/runtime/process-shared.ts). */
const writeNowOf = processShared('coalesce-write-now', () => new WeakMap<object, () => void>());

/**
 * Sends the commands `client` writes within one turn of the event loop (its microtasks included)
 * in few writes: the socket is corked at the turn's first command and uncorked on the next tick, or
 * once it holds COMMANDS_PER_WRITE commands (the turn's next command corks it again).
 * Redis then reads a turn's commands in as few reads as their size allows and answers them with one
 * write, instead of a read and a write per command, which is most of its CPU per lock cycle when
 * many callers share the connection (docs/benchmarks.md). Unlike ioredis' `enableAutoPipelining`, a turn's batch does
 * not wait for the previous batch's replies, so the client and Redis keep working at once.
 * Commands, their order, replies, errors and re-sends are unchanged: only the socket's writes are
 * grouped, and nothing is held past the current tick. Idempotent per client.
 */
export function coalesceWritesPerTick(client: Redis): void {
  if (writeNowOf.has(client)) return;
  let corked: ClientSocket | undefined;
  let commandsCorked = 0;
  const uncork = () => {
    const stream = corked;
    corked = undefined;
    stream?.uncork();
  };
  writeNowOf.set(client, uncork);
  useCommandHook(client, 'coalesce-writes', (next) => (command, stream) => {
    const socket = (stream as ClientSocket | undefined) ?? socketOf(client);
    if (corked === undefined && socket?.writable) {
      corked = socket;
      commandsCorked = 0;
      socket.cork();
      process.nextTick(uncork);
    }
    const sent = next(command, stream);
    if (corked !== undefined && ++commandsCorked >= COMMANDS_PER_WRITE) uncork();
    return sent;
  });
}

/**
 * Writes the commands `client` has corked in this turn now instead of on the next tick, for a
 * caller whose command should travel while it does long synchronous work in the same turn (the
 * next tick comes only once the turn's microtasks are done). Later commands of the turn cork again.
 * On a Cluster, each master connection's; nothing for a client that does not coalesce.
 */
export function writeCorkedNow(client: Redis | Cluster): void {
  const writeNow = writeNowOf.get(client);
  if (writeNow) return writeNow();
  if ('nodes' in client && typeof client.nodes === 'function') for (const node of client.nodes()) writeNowOf.get(node)?.();
}
