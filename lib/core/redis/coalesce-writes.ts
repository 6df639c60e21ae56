import type { Redis } from 'ioredis';

interface CorkableStream {
  readonly writable?: boolean;
  cork(): void;
  uncork(): void;
}
interface SendingClient {
  readonly stream?: CorkableStream;
  sendCommand(command: unknown, stream?: unknown): unknown;
}

const coalescing = new WeakSet<object>();

/**
 * Sends the commands `client` writes within one turn of the event loop (its microtasks included)
 * as one write: the socket is corked at the turn's first command and uncorked on the next tick.
 * Redis then reads a turn's commands in as few reads as their size allows and answers them with one
 * write, instead of a read and a write per command, which is most of its CPU per lock cycle when
 * many callers share the connection (docs/benchmarks.md). Unlike ioredis' `enableAutoPipelining`, a turn's batch does
 * not wait for the previous batch's replies, so the client and Redis keep working at once.
 * Commands, their order, replies, errors and re-sends are unchanged: only the socket's writes are
 * grouped, and nothing is held past the current tick. Idempotent per client.
 */
export function coalesceWritesPerTick(client: Redis): void {
  if (coalescing.has(client)) return;
  coalescing.add(client);
  const internals = client as unknown as SendingClient;
  const send = internals.sendCommand;
  let corked: CorkableStream | undefined;
  const uncork = () => {
    const stream = corked;
    corked = undefined;
    stream?.uncork();
  };
  internals.sendCommand = (command, stream) => {
    const socket = (stream as CorkableStream | undefined) ?? internals.stream;
    if (corked === undefined && socket?.writable) {
      corked = socket;
      socket.cork();
      process.nextTick(uncork);
    }
    return send.call(client, command, stream);
  };
}
