import type { Redis } from 'ioredis';

interface CountedSocket {
  _write: (...args: unknown[]) => unknown;
  _writev?: (...args: unknown[]) => unknown;
}

/**
 * Counts the socket writes (`_write` / `_writev` calls) of `client`'s current connection: `count()`
 * reads the number so far, `stop()` puts the socket back and returns it.
 */
export function watchSocketWrites(client: Redis): { count: () => number; stop: () => number } {
  const socket = (client as unknown as { stream: CountedSocket }).stream;
  const write = socket._write;
  const writev = socket._writev;
  let writes = 0;
  socket._write = function (this: unknown, ...args: unknown[]) {
    writes++;
    return write.apply(this, args);
  };
  if (writev) {
    socket._writev = function (this: unknown, ...args: unknown[]) {
      writes++;
      return writev.apply(this, args);
    };
  }
  return {
    count: () => writes,
    stop: () => {
      socket._write = write;
      if (writev) socket._writev = writev;
      return writes;
    },
  };
}
