/**
 * The Redis the checks run against: REDIS_URL when set, else a private `redis-server` on a free
 * loopback port (same idea as the repository's lib/testing/local-redis-server.ts; an app must not import
 * repository files, so it has its own small copy).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CompatRedis {
  readonly url: string;
  /** Where it came from, for the log. */
  readonly origin: 'REDIS_URL' | 'private redis-server';
  stop(): Promise<void>;
}

export async function startRedis(): Promise<CompatRedis> {
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) return { url: fromEnv, origin: 'REDIS_URL', stop: async () => undefined };

  const dir = mkdtempSync(join(tmpdir(), 'nestjs-redis-lock-compat-redis-'));
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    try {
      const child = await launch(port, dir);
      return {
        url: `redis://127.0.0.1:${port}`,
        origin: 'private redis-server',
        stop: async () => {
          await terminate(child);
          rmSync(dir, { recursive: true, force: true });
        },
      };
    } catch (error) {
      lastError = error; // the port was taken between freePort() and bind: try another
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw new Error(`could not start redis-server (is it installed and on PATH?): ${String(lastError)}`);
}

function freePort(): Promise<number> {
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

function launch(port: number, dir: string): Promise<ChildProcess> {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`redis-server did not start within 15 s:\n${output}`)), 15_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (!output.includes('Ready to accept connections')) return;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stdout?.resume();
      child.stderr?.resume();
      child.removeAllListeners('exit');
      resolve(child);
    };
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => fail(new Error(`redis-server exited with code ${code}:\n${output}`)));
    child.once('error', fail);
  });
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
