import { connect } from 'node:net';

/**
 * Why a server cannot be reached, in words, found with a plain TCP connect: GLIDE reports every
 * failed connection attempt within its connection timeout as "timed out", so a refused port and an
 * unknown host read the same there. Resolves (never rejects) within `timeoutMs`.
 */
export function probeEndpoint(host: string, port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (cause: string): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(cause);
    };
    const timer = setTimeout(() => done(`no answer from ${host}:${port} within ${timeoutMs} ms`), timeoutMs);
    socket.once('connect', () => done(`${host}:${port} accepts connections but Redis did not answer in time`));
    socket.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED') done(`connection refused by ${host}:${port} (ECONNREFUSED)`);
      else if (error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN') done(`unknown host ${host} (${error.code})`);
      else done(`${error.message} (${error.code ?? 'error'})`);
    });
  });
}
