import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outcomeOf } from '../support/child-process.js';

/**
 * `npm test`'s prerequisite check (tools/prerequisites.js, run first by tools/run-tests.js), on a
 * machine played by the environment: PATH holds only `node` (plus the fake programs a case puts
 * there) and PREREQUISITES_ROOT points the fixed install locations (/usr/lib/postgresql,
 * /etc/passwd, /Applications) at an empty directory.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const CHECK = join(ROOT, 'tools', 'prerequisites.js');
const RUN_TESTS = join(ROOT, 'tools', 'run-tests.js');
const EXIT_MISSING = 3;

let dir: string;
let nodeOnly: string;
let emptyRoot: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'prerequisites-spec-'));
  nodeOnly = join(dir, 'node-only');
  emptyRoot = join(dir, 'root');
  mkdirSync(nodeOnly);
  mkdirSync(emptyRoot);
  symlinkSync(process.execPath, join(nodeOnly, 'node'));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A shell script that prints `output` (a stand-in for `redis-server --version` and the like). */
function fakeProgram(binDir: string, name: string, output = ''): void {
  mkdirSync(binDir, { recursive: true });
  writeFileSync(join(binDir, name), `#!/bin/sh\necho '${output}'\n`);
  chmodSync(join(binDir, name), 0o755);
}

/** A machine with every prerequisite (fakes): its PATH, PG_BIN and root. */
function machineWithEverything(name: string, redisVersion = '7.2.4'): NodeJS.ProcessEnv {
  const bin = join(dir, name, 'bin');
  const pgBin = join(dir, name, 'pg');
  const root = join(dir, name, 'root');
  fakeProgram(bin, 'redis-server', `Redis server v=${redisVersion} sha=00000000:0 malloc=libc bits=64 build=0`);
  fakeProgram(bin, 'redis-cli', `redis-cli ${redisVersion}`);
  fakeProgram(bin, 'chromium');
  fakeProgram(pgBin, 'initdb');
  fakeProgram(pgBin, 'postgres');
  // Running as root, PostgreSQL runs as the `postgres` system user: the fake machine has one.
  mkdirSync(join(root, 'etc'), { recursive: true });
  writeFileSync(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\npostgres:x:105:108::/var/lib/postgresql:/bin/sh\n');
  return { PATH: `${nodeOnly}:${bin}`, PG_BIN: pgBin, PREREQUISITES_ROOT: root };
}

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `script` with exactly `env` (nothing inherited: no REDIS_URL, PG_BIN or CHROMIUM_PATH of this machine). */
function runScript(script: string, args: string[], env: NodeJS.ProcessEnv): Promise<Outcome> {
  const started = performance.now();
  const child = spawn(process.execPath, [script, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return outcomeOf(child).then((outcome) => ({ ...outcome, ms: performance.now() - started }));
}

const occurrences = (text: string, part: string) => text.split(part).length - 1;

describe('npm test checks its prerequisites before running anything', () => {
  it('a machine with none of them: one message naming each, with its install commands and env var, exit 3', async () => {
    const outcome = await runScript(CHECK, [], { PATH: nodeOnly, PREREQUISITES_ROOT: emptyRoot });

    expect(outcome.code).toBe(EXIT_MISSING);
    expect(outcome.stdout).toBe('');
    const message = outcome.stderr;
    expect(occurrences(message, 'no test was run')).toBe(1);
    for (const part of [
      'npm test needs 3 programs this machine lacks',
      '✗ redis-server and redis-cli 7.0+: redis-server is not on PATH; redis-cli is not on PATH',
      'sudo apt-get install redis-server',
      'brew install redis',
      'REDIS_URL=',
      '✗ PostgreSQL server binaries (initdb, postgres)',
      'sudo apt-get install postgresql',
      'brew install postgresql@17',
      'PG_BIN=',
      '✗ Chromium (or Chrome)',
      'sudo apt-get install chromium',
      'brew install --cask chromium',
      'CHROMIUM_PATH=',
    ]) {
      expect(message).toContain(part);
    }
  });

  it('npm test (tools/run-tests.js) stops at that message: no type check, no Jest', async () => {
    const outcome = await runScript(RUN_TESTS, [], { PATH: nodeOnly, PREREQUISITES_ROOT: emptyRoot });

    expect(outcome.code).toBe(EXIT_MISSING);
    expect(outcome.stderr).toContain('npm test needs 3 programs this machine lacks; no test was run.');
    // tsc and Jest would print their own lines (a type error, "Tests use Redis at …", a summary).
    expect(outcome.stdout).toBe('');
    expect(outcome.stderr).not.toMatch(/Tests:|error TS|Tests use Redis/);
  });

  it('names only what is missing, and why (a Redis older than 7.0, CHROMIUM_PATH that is no program)', async () => {
    const env = machineWithEverything('old-redis', '6.2.14');
    const outcome = await runScript(CHECK, [], { ...env, CHROMIUM_PATH: join(dir, 'no-such-chromium') });

    expect(outcome.code).toBe(EXIT_MISSING);
    expect(outcome.stderr).toContain('npm test needs 2 programs this machine lacks');
    expect(outcome.stderr).toMatch(/redis-server is 6\.2, older than 7\.0; .*redis-cli is 6\.2, older than 7\.0/);
    expect(outcome.stderr).toContain(`CHROMIUM_PATH is ${join(dir, 'no-such-chromium')}, which is not an executable file`);
    expect(outcome.stderr).not.toContain('PostgreSQL');
  });

  it('a machine with all of them passes through at once, silently, exit 0', async () => {
    const outcome = await runScript(CHECK, [], machineWithEverything('complete'));

    expect(outcome).toMatchObject({ code: 0, stdout: '', stderr: '' });
    // Measured ~0.3-1 s (node start, three `--version` runs, a walk of the specs' imports); bounded loosely for a loaded machine.
    expect(outcome.ms).toBeLessThan(15_000);
  });

  it('this machine (which runs the suite) has them all', async () => {
    const outcome = await runScript(CHECK, [], process.env);

    expect(outcome).toMatchObject({ code: 0, stderr: '' });
  });

  it('a run of some spec files needs only what those files use (their imports followed)', async () => {
    const noBrowserNoPostgres = { ...machineWithEverything('redis-only'), PG_BIN: undefined, CHROMIUM_PATH: join(dir, 'none') };

    const lockSpec = await runScript(CHECK, ['--', 'test/lock/fences.spec.ts'], noBrowserNoPostgres);
    expect(lockSpec).toMatchObject({ code: 0, stderr: '' });

    const pgSpec = await runScript(CHECK, ['--', 'test/outbox/outbox.pg.spec.ts'], noBrowserNoPostgres);
    expect(pgSpec.code).toBe(EXIT_MISSING);
    expect(pgSpec.stderr).toContain('✗ PostgreSQL server binaries');
    expect(pgSpec.stderr).not.toContain('Chromium');

    const browserSpec = await runScript(CHECK, ['--', 'test/observability/dashboard-browser.e2e.spec.ts'], noBrowserNoPostgres);
    expect(browserSpec.code).toBe(EXIT_MISSING);
    expect(browserSpec.stderr).toContain('✗ Chromium (or Chrome)');
  }, 60_000);
});
