import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { findPostgresBin, postgresServerUser } from '../../tools/prerequisites.js';
import { findFreePort } from '../../lib/testing/local-redis-server.js';

/** A throwaway PostgreSQL server of the test file's own: temp data dir, free loopback port, trust auth. */
export interface LocalPostgres {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly database: string;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  /** Stops the server (once its clients have disconnected) and deletes its data directory. */
  stop(): Promise<void>;
}

export const NO_POSTGRES_MESSAGE = [
  'The transaction tests need PostgreSQL server binaries (initdb and postgres), and none were found.',
  'Install them, then run the tests again:',
  '  - Debian/Ubuntu: `sudo apt-get install postgresql` (.ci/run does this on CI);',
  '  - macOS: `brew install postgresql@15`;',
  '  - or point PG_BIN at the directory that holds initdb and postgres.',
].join('\n');

/**
 * Starts PostgreSQL with `initdb` + `postgres` from `PG_BIN`, `/usr/lib/postgresql/<version>/bin`
 * or PATH. Running as root (CI containers), both run as the `postgres` system user, since
 * PostgreSQL refuses to run as root. Durability is switched off: these servers live for one file.
 * Never skips: without binaries it fails with `NO_POSTGRES_MESSAGE`.
 */
export async function startLocalPostgres(): Promise<LocalPostgres> {
  const bin = findPostgresBin();
  if (!bin) throw new Error(NO_POSTGRES_MESSAGE);
  const owner = postgresServerUser();
  const dir = mkdtempSync(join(tmpdir(), 'nestjs-redis-lock-pg-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  try {
    const init = spawnSync(
      join(bin, 'initdb'),
      ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
      { encoding: 'utf8', uid: owner?.uid, gid: owner?.gid, cwd: dir },
    );
    if (init.status !== 0) {
      throw new Error(`initdb failed (exit ${init.status ?? init.signal}):\n${init.stderr || init.stdout || init.error}`);
    }
    let lastError: unknown;
    for (let attempt = 0; attempt < 5; attempt++) {
      const port = await findFreePort();
      try {
        const child = await launch(bin, data, dir, port, owner);
        return handleFor(child, port, dir);
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** A connected `pg` client on `server`; end it with `client.end()`. */
export async function connectPostgres(server: LocalPostgres): Promise<Client> {
  const client = new Client({ host: server.host, port: server.port, user: server.user, database: server.database });
  await client.connect();
  return client;
}

function handleFor(child: ChildProcess, port: number, dir: string): LocalPostgres {
  // A crashed or killed jest worker must not leave a server behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  return {
    host: '127.0.0.1',
    port,
    user: 'postgres',
    database: 'postgres',
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      process.off('exit', killOnExit);
      await terminate(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function launch(
  bin: string,
  data: string,
  dir: string,
  port: number,
  owner: { uid: number; gid: number } | undefined,
): Promise<ChildProcess> {
  const settings = {
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: dir,
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
    max_connections: '40',
    shared_buffers: '16MB',
  };
  const args = ['-D', data, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const child = spawn(join(bin, 'postgres'), args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    uid: owner?.uid,
    gid: owner?.gid,
    cwd: dir,
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error(`postgres did not start within 20 s:\n${output}`)), 20_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('database system is ready to accept connections')) {
        clearTimeout(timer);
        child.stderr?.off('data', onData);
        child.off('exit', onExit);
        child.stdout?.resume();
        child.stderr?.resume();
        resolve(child);
      }
    };
    const onExit = (code: number | null) => fail(new Error(`postgres exited with code ${code}:\n${output}`));
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', fail);
  });
}

/**
 * Smart shutdown first (SIGTERM): it waits for sessions to end instead of sending them a FATAL
 * error, which a `pg` client that is still closing its socket after `pool.end()` would emit as an
 * unhandled 'error' event. Fast shutdown (SIGINT) if a session lingers, SIGKILL as the last resort.
 */
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
