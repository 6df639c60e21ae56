import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestRedisUnavailableError } from './test-redis-unavailable.error.js';

/** How long a `redis-server` gets to say it accepts connections, and to exit after SIGTERM. */
const START_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 5_000;

/**
 * A `redis-server` process of your own, on a free loopback port, in a temporary directory, with
 * persistence off. Started by {@link startLocalRedisServer}.
 *
 * @example
 * import { startLocalRedisServer } from 'nestjs-redis-lock/testing';
 *
 * const server = await startLocalRedisServer();
 * // RedisLockModule.forRoot({ redis: server.url }) …
 * await server.restart();  // killed (SIGKILL) and started again on the same port: its keys are gone
 * await server.stop();     // SIGTERM (SIGKILL after 5 s), then its directory is removed
 */
export interface LocalRedisServer extends AsyncDisposable {
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** The loopback port it listens on. */
  readonly port: number;
  /** Its working directory (removed by `stop()`). */
  readonly dir: string;
  /** The running process; a new one after each `restart()`. */
  readonly process: ChildProcess;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and removes its directory. Safe to call twice. */
  stop(): Promise<void>;
  /**
   * Kills the server (SIGKILL by default: a crash) and starts it again on the same port and
   * directory, after `downtimeMs` and once `until` (when given) has settled. For tests of what
   * your code does while Redis is down or after it lost its data; `until` keeps it down for as
   * long as the test needs, whatever the machine's load.
   *
   * @example
   * let bringBack!: () => void;
   * const restarted = server.restart({ until: new Promise<void>((resolve) => (bringBack = resolve)) });
   * // ... calls that must fail while Redis is down ...
   * bringBack();
   * await restarted;
   */
  restart(options?: { signal?: NodeJS.Signals; downtimeMs?: number; until?: Promise<unknown> }): Promise<void>;
}

/**
 * Options of {@link startLocalRedisServer}.
 *
 * @example
 * await startLocalRedisServer({ args: ['--appendonly', 'yes'] }); // survives restart() with its keys
 */
export interface LocalRedisServerOptions {
  /** Extra `redis-server` arguments, e.g. `['--appendonly', 'yes']`; they override the defaults. */
  args?: string[];
  /** A fixed port; default: a free one, chosen by the operating system. */
  port?: number;
}

/**
 * Whether a `redis-server` can be started from PATH.
 *
 * @example
 * import { hasRedisServerBinary } from 'nestjs-redis-lock/testing';
 *
 * if (!hasRedisServerBinary() && !process.env.REDIS_URL) console.warn('Install redis-server or set REDIS_URL');
 */
export function hasRedisServerBinary(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * A TCP port on 127.0.0.1 that nothing listens on right now (the operating system's pick).
 *
 * @example
 * import { findFreePort } from 'nestjs-redis-lock/testing';
 *
 * const port = await findFreePort();
 * await app.listen(port, '127.0.0.1');
 */
export async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Starts `redis-server` from PATH on 127.0.0.1 and resolves once it accepts connections. A port
 * taken by someone else between choosing and binding it is retried with another one. Rejects with
 * `TestRedisUnavailableError` when there is no `redis-server` on PATH.
 *
 * Stop it with `stop()` (or `await using`); a server still running when the Node process exits is
 * killed then.
 *
 * @example
 * import { startLocalRedisServer } from 'nestjs-redis-lock/testing';
 *
 * await using server = await startLocalRedisServer();
 * const moduleRef = await initRedisLockTestingModule({ redis: server.url, providers: [OrdersService] });
 */
export async function startLocalRedisServer(options: LocalRedisServerOptions = {}): Promise<LocalRedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'nestjs-redis-lock-'));
  const args = options.args ?? [];
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = options.port ?? (await findFreePort());
    try {
      let child = await launch(port, dir, args);
      const stop = async () => {
        await terminate(child);
        rmSync(dir, { recursive: true, force: true });
      };
      return {
        url: `redis://127.0.0.1:${port}`,
        port,
        dir,
        get process() {
          return child;
        },
        stop,
        [Symbol.asyncDispose]: stop,
        async restart({ signal = 'SIGKILL', downtimeMs = 0, until } = {}) {
          await terminate(child, signal);
          if (downtimeMs > 0) await new Promise((resolve) => setTimeout(resolve, downtimeMs));
          if (until)
            await until.then(
              () => undefined,
              () => undefined,
            );
          child = await launch(port, dir, args);
        },
      };
    } catch (error) {
      lastError = error;
      if (options.port !== undefined || error instanceof TestRedisUnavailableError) break;
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError;
}

/** Servers still running: killed if the process exits without stopping them (a failed test run). */
const running = new Set<ChildProcess>();
const killRunningServers = () => {
  for (const server of running) server.kill('SIGKILL');
};

/** The exit listener is there only while a server runs, so test files that stop theirs leave none behind. */
function killOnExit(child: ChildProcess): void {
  if (running.size === 0) process.on('exit', killRunningServers);
  running.add(child);
  child.once('exit', () => {
    running.delete(child);
    if (running.size === 0) process.off('exit', killRunningServers);
  });
}

function launch(port: number, dir: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let output = '';
    let settled = false;
    const timer = setTimeout(
      () => fail(new Error(`redis-server did not start within ${START_TIMEOUT_MS / 1000} s:\n${output}`)),
      START_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (settled || !output.includes('Ready to accept connections')) return;
      settled = true;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      // Keep draining its output, or a chatty server would block on a full pipe.
      child.stdout?.resume();
      child.stderr?.resume();
      killOnExit(child);
      resolve(child);
    };
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => fail(new Error(`redis-server exited with code ${code}:\n${output}`)));
    child.once('error', (error: NodeJS.ErrnoException) => fail(error.code === 'ENOENT' ? new TestRedisUnavailableError(error) : error));
  });
}

async function terminate(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}
