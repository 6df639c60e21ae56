#!/usr/bin/env node
/**
 * The programs `npm test` needs besides node_modules, checked once before anything runs
 * (tools/run-tests.js calls this first): redis-server and redis-cli 7.0+, PostgreSQL's server
 * binaries, and Chromium. When one is missing it prints ONE message naming each missing program with
 * its install command (Debian/Ubuntu, macOS) and the environment variable that points at one, and
 * exits with code 3; specs are never skipped into a green run.
 *
 *   node tools/prerequisites.js                    what the whole suite needs
 *   node tools/prerequisites.js -- <spec paths>    what those spec files need (their imports are followed)
 *
 * The spec helpers find the programs with the same functions (test/support/postgres.ts,
 * test/support/chromium.ts), so what this check accepts is what the specs use.
 *
 * `PREREQUISITES_ROOT` (default `/`) is prefixed to the fixed install locations searched
 * (/usr/lib/postgresql, /etc/passwd, /Applications, ...): test/unit/prerequisites.spec.ts points it
 * at an empty directory to play a machine without them.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { delimiter, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const EXIT_MISSING = 3;
/** Redis Cluster specs (`redis-cli --cluster create`, shard channels) need 7.0. */
const REDIS_MIN = [7, 0];

/** `path` under `env.PREREQUISITES_ROOT`. */
function underRoot(env, path) {
  return join(env.PREREQUISITES_ROOT ?? '/', path);
}

function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The first `name` on `env.PATH` that can be executed. */
export function onPath(name, env = process.env) {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/**
 * The directory holding PostgreSQL's `initdb` and `postgres`: `PG_BIN`, else the newest
 * `/usr/lib/postgresql/<version>/bin` (Debian/Ubuntu), else the directory of `initdb` on PATH
 * (Homebrew, Postgres.app, other distributions).
 */
export function findPostgresBin(env = process.env) {
  const has = (dir) => isExecutable(join(dir, 'initdb')) && isExecutable(join(dir, 'postgres'));
  if (env.PG_BIN && has(env.PG_BIN)) return env.PG_BIN;
  const debian = underRoot(env, '/usr/lib/postgresql');
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => /^\d+(\.\d+)?$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const version of versions) if (has(join(debian, version, 'bin'))) return join(debian, version, 'bin');
  }
  const initdb = onPath('initdb', env);
  return initdb && has(dirname(initdb)) ? dirname(initdb) : undefined;
}

/**
 * Running as root (CI containers), PostgreSQL must run as another user: the `postgres` system user
 * that the Debian package creates. Its uid/gid, or undefined when not running as root.
 * Throws when running as root without such a user.
 */
export function postgresServerUser(env = process.env) {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  let passwd = '';
  try {
    passwd = readFileSync(underRoot(env, '/etc/passwd'), 'utf8');
  } catch {
    // No passwd file: no such user.
  }
  const entry = passwd
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === 'postgres');
  if (!entry) {
    throw new Error(
      'Running as root, and there is no `postgres` system user to run PostgreSQL as (it refuses to run as root). ' +
        'Installing the Debian package creates it: `apt-get install postgresql`; or run the tests as a non-root user.',
    );
  }
  return { uid: Number(entry[2]), gid: Number(entry[3]) };
}

/**
 * A Chromium or Chrome for the browser specs: `CHROMIUM_PATH`, else `chromium`, `chromium-browser`,
 * `google-chrome` or `google-chrome-stable` on PATH, else the macOS applications.
 */
export function findChromium(env = process.env) {
  if (env.CHROMIUM_PATH) return isExecutable(env.CHROMIUM_PATH) ? env.CHROMIUM_PATH : undefined;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable']) {
    const found = onPath(name, env);
    if (found) return found;
  }
  for (const app of [
    '/Applications/Chromium.app/Contents/MacOS/Chromium',
    '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
  ]) {
    if (isExecutable(underRoot(env, app))) return underRoot(env, app);
  }
  return undefined;
}

/** `[major, minor]` of a `redis-server` / `redis-cli` on PATH, or undefined when there is none. */
function redisVersion(program, env) {
  const path = onPath(program, env);
  if (!path) return undefined;
  const run = spawnSync(path, ['--version'], { encoding: 'utf8', env, timeout: 10_000 });
  const match = /(?:v=|redis-cli )(\d+)\.(\d+)/.exec(run.stdout ?? '');
  return match ? { path, version: [Number(match[1]), Number(match[2])] } : { path, version: undefined };
}

const atLeast = ([major, minor], [wantMajor, wantMinor]) => major > wantMajor || (major === wantMajor && minor >= wantMinor);

/**
 * What each prerequisite is, which spec files need it (a file the spec reaches through its relative
 * imports, or a package it imports), how to check it and how to get it.
 */
const PREREQUISITES = [
  {
    name: 'redis-server and redis-cli 7.0+',
    neededBy: 'every spec (the run starts its Redis and Redis Cluster with them; fault specs start, kill and restart their own servers)',
    needed: () => true,
    problem(env) {
      const problems = [];
      for (const program of ['redis-server', 'redis-cli']) {
        const found = redisVersion(program, env);
        if (!found) problems.push(`${program} is not on PATH`);
        else if (!found.version) problems.push(`${found.path} --version printed no version`);
        else if (!atLeast(found.version, REDIS_MIN)) problems.push(`${found.path} is ${found.version.join('.')}, older than 7.0`);
      }
      return problems.join('; ') || undefined;
    },
    install: ['Debian/Ubuntu: sudo apt-get install redis-server   (redis-cli comes with it)', 'macOS:         brew install redis'],
    instead:
      'REDIS_URL=redis://host:port gives the run a server of yours, but the fault, cluster and Sentinel specs still start ' +
      'their own redis-server processes, so the binaries are needed all the same',
  },
  {
    name: 'PostgreSQL server binaries (initdb, postgres)',
    neededBy: 'the *.pg.spec.ts files and the sample app e2e specs (each starts a throwaway server)',
    needed: (reaches) => reaches('test/support/postgres.ts'),
    problem(env) {
      if (!findPostgresBin(env)) {
        return `no initdb and postgres in ${env.PG_BIN ? `PG_BIN (${env.PG_BIN}), ` : ''}/usr/lib/postgresql/*/bin or on PATH`;
      }
      try {
        postgresServerUser(env);
      } catch (error) {
        return error.message;
      }
      return undefined;
    },
    install: ['Debian/Ubuntu: sudo apt-get install postgresql', 'macOS:         brew install postgresql@17'],
    instead:
      'PG_BIN=/path/to/dir holding initdb and postgres (a server that is already running is not used: each spec file starts its own)',
  },
  {
    name: 'Chromium (or Chrome)',
    neededBy: 'test/observability/dashboard-browser.e2e.spec.ts (drives the dashboard in a headless browser)',
    needed: (reaches) => reaches('test/support/chromium.ts'),
    problem(env) {
      if (findChromium(env)) return undefined;
      if (env.CHROMIUM_PATH) return `CHROMIUM_PATH is ${env.CHROMIUM_PATH}, which is not an executable file`;
      return 'no chromium, chromium-browser, google-chrome or google-chrome-stable on PATH';
    },
    install: [
      'Debian:        sudo apt-get install chromium',
      'Ubuntu:        sudo snap install chromium   (the apt package chromium-browser installs the snap)',
      'macOS:         brew install --cask chromium',
    ],
    instead: 'CHROMIUM_PATH=/path/to/chromium-or-chrome',
  },
];

/** Relative imports (`from './x.js'`, `import('./x.js')`, `export … from`) of a source file, resolved to files. */
function importsOf(file) {
  let source;
  try {
    source = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const found = [];
  for (const match of source.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = resolve(dirname(file), match[1]);
    const candidates = [target, target.replace(/\.js$/, '.ts'), `${target}.ts`, join(target, 'index.ts')];
    const hit = candidates.find((candidate) => existsSync(candidate) && statSync(candidate).isFile());
    if (hit) found.push(hit);
  }
  return found;
}

/** Every file (relative to the repository) the spec files reach through relative imports, themselves included. */
export function reachableFiles(specFiles) {
  const seen = new Set();
  const queue = specFiles.map((file) => resolve(ROOT, file));
  while (queue.length > 0) {
    const file = queue.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    queue.push(...importsOf(file));
  }
  return new Set([...seen].map((file) => relative(ROOT, file)));
}

/** Every spec file of the suite (what `jest` with no filter runs). */
export function allSpecFiles() {
  const specs = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.name.endsWith('.spec.ts')) specs.push(relative(ROOT, join(dir, entry.name)));
    }
  };
  walk(join(ROOT, 'test'));
  return specs;
}

/**
 * The spec files a `jest <args>` run would run: all of them without arguments, else Jest's own
 * answer (`--listTests`), so path patterns, `--testPathPatterns` and config flags mean what they mean to Jest.
 */
export function specFilesOfRun(jestArgs, node = process.execPath) {
  if (jestArgs.length === 0) return allSpecFiles();
  const list = spawnSync(
    node,
    [
      '--experimental-vm-modules',
      '--disable-warning=ExperimentalWarning',
      join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'),
      '--listTests',
      ...jestArgs,
    ],
    { cwd: ROOT, encoding: 'utf8' },
  );
  // Jest cannot list them (an unknown flag, say): check for the whole suite and let Jest report the flag.
  if (list.status !== 0) return allSpecFiles();
  return list.stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.endsWith('.ts'))
    .map((line) => relative(ROOT, line));
}

/** The prerequisites the given spec files need that this machine lacks, each with its problem. */
export function missingPrerequisites(specFiles, env = process.env) {
  const reached = reachableFiles(specFiles);
  const reaches = (file) => reached.has(file);
  const missing = [];
  for (const prerequisite of PREREQUISITES) {
    if (!prerequisite.needed(reaches)) continue;
    const problem = prerequisite.problem(env);
    if (problem) missing.push({ ...prerequisite, problem });
  }
  return missing;
}

/** The one message listing every missing prerequisite. */
export function formatMissing(missing) {
  const lines = [
    `npm test needs ${missing.length === 1 ? 'a program' : `${missing.length} programs`} this machine lacks; no test was run.`,
    '',
  ];
  for (const item of missing) {
    lines.push(`✗ ${item.name}: ${item.problem}`);
    lines.push(`    needed by ${item.neededBy}`);
    for (const line of item.install) lines.push(`    ${line}`);
    lines.push(`    or:            ${item.instead}`);
    lines.push('');
  }
  lines.push("Install them, then run npm test again. (.ci/run installs them from Debian's packages on CI.)");
  return lines.join('\n');
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const jestArgs = args[0] === '--' ? args.slice(1) : args;
  const missing = missingPrerequisites(specFilesOfRun(jestArgs));
  if (missing.length > 0) {
    console.error(formatMissing(missing));
    process.exit(EXIT_MISSING);
  }
}
