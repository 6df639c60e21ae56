/**
 * Starts and stops private `redis-server` processes on loopback: used by the test harness, the
 * benchmarks, and the sample app when no REDIS_URL is configured.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A `redis-server` process of the test run's own, on a free loopback port, in a temp dir. */
export interface LocalRedisServer {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  readonly process: ChildProcess;
  /** Stops the server (SIGTERM, then SIGKILL) and removes its directory. */
  stop(): Promise<void>;
  /** Kills the server (SIGKILL by default) and starts it again on the same port and directory. */
  restart(options?: { signal?: NodeJS.Signals; downtimeMs?: number }): Promise<void>;
}

export interface LocalRedisOptions {
  /** Extra `redis-server` arguments, e.g. `['--appendonly', 'yes']`. */
  args?: string[];
  port?: number;
}

export function hasRedisServerBinary(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

export async function freePort(): Promise<number> {
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

/** Starts `redis-server` from PATH; resolves once it accepts connections. */
export async function startLocalRedisServer(options: LocalRedisOptions = {}): Promise<LocalRedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'nestjs-redis-lock-'));
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = options.port ?? (await freePort());
    try {
      let child = await launch(port, dir, options.args ?? []);
      const server: LocalRedisServer = {
        url: `redis://127.0.0.1:${port}`,
        port,
        dir,
        get process() {
          return child;
        },
        async stop() {
          await terminate(child);
          rmSync(dir, { recursive: true, force: true });
        },
        async restart({ signal = 'SIGKILL', downtimeMs = 0 } = {}) {
          await terminate(child, signal);
          if (downtimeMs > 0) await new Promise((r) => setTimeout(r, downtimeMs));
          child = await launch(port, dir, options.args ?? []);
        },
      };
      return server;
    } catch (error) {
      lastError = error;
      if (options.port !== undefined) break;
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError;
}

function launch(port: number, dir: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`redis-server did not start within 10 s:\n${output}`)), 10_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        child.stderr?.resume();
        resolve(child);
      }
    };
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    child.once('exit', (code) => fail(new Error(`redis-server exited with code ${code}:\n${output}`)));
    child.once('error', fail);
  });
}

async function terminate(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
