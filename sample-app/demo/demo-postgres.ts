/**
 * A private PostgreSQL server for the demo's three instances, which must share one database (an
 * order paid on one instance has its steps run on the others). Started from the server binaries on
 * this machine (`PG_BIN`, `/usr/lib/postgresql/<version>/bin`, or `initdb` on PATH) in a temporary
 * directory on a free loopback port, and deleted afterwards, as the demo does with redis-server.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, chownSync, constants, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { findFreePort } from 'nestjs-redis-lock/testing';

export interface DemoPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  stop(): Promise<void>;
}

/** The directory holding `initdb` and `postgres`, or undefined when this machine has none. */
export function findPostgresBin(env = process.env): string | undefined {
  const has = (dir: string) => ['initdb', 'postgres'].every((program) => isExecutable(join(dir, program)));
  const candidates = [env.PG_BIN ?? ''];
  if (existsSync('/usr/lib/postgresql')) {
    const versions = readdirSync('/usr/lib/postgresql')
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((version) => join('/usr/lib/postgresql', version, 'bin')));
  }
  candidates.push(...(env.PATH ?? '').split(delimiter));
  return candidates.find((dir) => dir && has(dir));
}

export async function startDemoPostgres(bin: string): Promise<DemoPostgres> {
  // PostgreSQL refuses to run as root: then it runs as the `postgres` system user.
  const owner = process.getuid?.() === 0 ? postgresUser() : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'sample-demo-pg-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'], {
    encoding: 'utf8',
    cwd: dir,
    ...owner,
  });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed:\n${init.stderr || init.stdout}`);
  }
  const port = await findFreePort();
  const settings = {
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: dir,
    fsync: 'off',
    max_connections: '100',
  };
  const child = spawn(join(bin, 'postgres'), ['-D', data, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])], {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: dir,
    ...owner,
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGINT'); // fast shutdown: ends the sessions the instances left
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await ready(child);
  } catch (error) {
    child.kill('SIGKILL');
    await stop();
    throw error;
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop };
}

function ready(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`postgres did not start within 30 s:\n${output}`)), 30_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('database system is ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stdout?.resume();
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`postgres exited with code ${code}:\n${output}`));
    });
  });
}

function postgresUser(): { uid: number; gid: number } {
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === 'postgres');
  if (!entry) throw new Error('running as root and there is no `postgres` system user to run PostgreSQL as');
  return { uid: Number(entry[2]), gid: Number(entry[3]) };
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
