import type { ChildProcess } from 'node:child_process';

/** Resolves with the first line of the child's stdout that matches `pattern`. */
export function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms; got:\n${buffer}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString();
      const line = buffer.split('\n').find((l) => pattern.test(l));
      if (line !== undefined) {
        cleanup();
        resolve(line);
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`process exited (${code}) before printing ${pattern}:\n${buffer}`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
    };
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
}
