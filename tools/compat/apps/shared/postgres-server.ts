/**
 * A private PostgreSQL server for the checks that need one (the outbox's SQL is PostgreSQL's):
 * `initdb` + `postgres` from PG_BIN, /usr/lib/postgresql/<version>/bin or PATH, on a free loopback
 * port, trust auth, in a temp directory (the repository's test/support/postgres.ts does the same; an
 * app must not import repository files, so it has its own small copy). Running as root, the server
 * runs as the `postgres` system user, since PostgreSQL refuses root.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface CompatPostgres {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly database: string;
  stop(): Promise<void>;
}

export async function startPostgres(): Promise<CompatPostgres> {
  const bin = postgresBin();
  if (!bin) throw new Error('no PostgreSQL server binaries (initdb, postgres) in PG_BIN, /usr/lib/postgresql/*/bin or on PATH');
  const owner = serverUser();
  const dir = mkdtempSync(join(tmpdir(), 'nestjs-redis-lock-compat-pg-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'], {
    encoding: 'utf8',
    uid: owner?.uid,
    gid: owner?.gid,
    cwd: dir,
  });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (exit ${init.status ?? init.signal}):\n${init.stderr || init.stdout}`);
  }
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    try {
      const child = await launch(bin, data, dir, port, owner);
      return {
        host: '127.0.0.1',
        port,
        user: 'postgres',
        database: 'postgres',
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
  throw lastError;
}

function postgresBin(): string | undefined {
  const has = (dir: string) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'));
  if (process.env.PG_BIN && has(process.env.PG_BIN)) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => /^\d+(\.\d+)?$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const version of versions) if (has(join(root, version, 'bin'))) return join(root, version, 'bin');
  }
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir && has(dir)) return dir;
  const which = spawnSync('sh', ['-c', 'command -v initdb'], { encoding: 'utf8' });
  return which.status === 0 && has(dirname(which.stdout.trim())) ? dirname(which.stdout.trim()) : undefined;
}

function serverUser(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === 'postgres');
  if (!entry) throw new Error('running as root without a `postgres` system user to run PostgreSQL as');
  return { uid: Number(entry[2]), gid: Number(entry[3]) };
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

function launch(
  bin: string,
  data: string,
  dir: string,
  port: number,
  owner: { uid: number; gid: number } | undefined,
): Promise<ChildProcess> {
  const settings = { listen_addresses: '127.0.0.1', port: String(port), unix_socket_directories: dir, fsync: 'off', max_connections: '20' };
  const args = ['-D', data, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const child = spawn(join(bin, 'postgres'), args, { stdio: ['ignore', 'pipe', 'pipe'], uid: owner?.uid, gid: owner?.gid, cwd: dir });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`postgres did not start within 30 s:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (!output.includes('database system is ready to accept connections')) return;
      clearTimeout(timer);
      child.stderr?.off('data', onData);
      child.removeAllListeners('exit');
      child.stdout?.resume();
      child.stderr?.resume();
      resolve(child);
    };
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', onData);
    child.once('exit', (code) => fail(new Error(`postgres exited with code ${code}:\n${output}`)));
    child.once('error', fail);
  });
}

/** Smart shutdown (waits for sessions to end), then fast, then SIGKILL. */
async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const fast = setTimeout(() => child.kill('SIGINT'), 5_000);
  const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(fast);
  clearTimeout(kill);
}
