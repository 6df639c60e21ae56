/**
 * The consumer-app compatibility lane (`npm run test:compat`).
 *
 * Packs the library as it would be published (`npm pack`, whose `prepack` builds dist/), then for
 * each consumer app: copies its files (tools/compat/apps/<app>/, reproduced from the `nest new`
 * template of its Nest major, plus the shared checks of tools/compat/apps/shared/) into a fresh
 * directory under the OS temp dir, runs ONE plain `npm install` there from the registry (no
 * --legacy-peer-deps, no --force, no overrides), compiles it with the app's own `tsc` and
 * skipLibCheck off, and runs it against a real Redis (REDIS_URL, else a private redis-server the
 * app starts). See docs/compatibility.md for the matrix and what each app checks.
 *
 *   npm run test:compat                        every app, with the node running this script
 *   npm run test:compat -- nest12-esm          one app (several names: those apps)
 *   npm run test:compat -- --node /path/node   run the compiled apps with that node (repeatable;
 *                                              installs and compiles once for all of them)
 *   npm run test:compat -- --jobs 1            install and compile one app at a time (default: 3 at once)
 *   npm run test:compat -- --tarball x.tgz     test that tarball instead of packing the repository
 *   npm run test:compat -- --keep              keep the app directories (kept anyway on a failure)
 *   npm run test:compat -- --check-templates   also compare the apps with today's `nest new` templates
 *                                              (packs @nestjs/schematics 12 and 11; see template-drift.js)
 *
 * Exits non-zero when anything fails; the last line is `compat: N passed, M failed` (checks).
 */
import { spawn } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { templateDrift } from './template-drift.js';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '../..');
const appsDir = join(here, 'apps');
const workRoot = process.env.COMPAT_WORK_DIR ?? join(tmpdir(), 'nestjs-redis-lock-compat');
/** Where every app's package.json points: "nestjs-redis-lock": "file:../nestjs-redis-lock.tgz". */
const tarballInWorkRoot = join(workRoot, 'nestjs-redis-lock.tgz');

const INSTALL_TIMEOUT_MS = 15 * 60_000;
const COMPILE_TIMEOUT_MS = 5 * 60_000;
const RUN_TIMEOUT_MS = 5 * 60_000;
/** After its summary line an app must exit by itself: a handle left open would keep a user's process alive. */
const EXIT_GRACE_MS = 15_000;

/** Files of apps/shared/ that every app gets (as src/compat/). */
const COMMON_CHECKS = [
  'app-flavor.ts',
  'caveats.ts',
  'check-list.ts',
  'cls-transactions.ts',
  'compat.module.ts',
  'installed-packages.ts',
  'redis-server.ts',
  'run-checks.ts',
  'testing-subpath.ts',
];

const APPS = {
  'nest12-cjs': {
    what: 'Nest 12 `nest new --type cjs`: CommonJS, TypeScript 6, ioredis 6',
    moduleSystem: 'commonjs',
    checks: [...COMMON_CHECKS, 'metrics-subpath.ts', 'without-open-telemetry.ts', 'nest12-cjs.flavor.ts'],
  },
  'nest12-esm': {
    what: 'Nest 12 `nest new` (ESM, the default): "type": "module", TypeScript 6, ioredis 6, OpenTelemetry',
    moduleSystem: 'esm',
    checks: [...COMMON_CHECKS, 'metrics-subpath.ts', 'with-open-telemetry.ts', 'nest12-esm.flavor.ts'],
  },
  'nest11-cjs': {
    what: 'Nest 11 `nest new`: CommonJS, TypeScript 5, ioredis 5, typeorm, no prom-client / @opentelemetry/api, Jest 30 + ts-jest',
    moduleSystem: 'commonjs',
    /** Also runs the template's `jest` (its package.json "jest": ts-jest, CommonJS) on src/*.spec.ts, with each node. */
    jest: true,
    checks: [...COMMON_CHECKS, 'metrics-absent.ts', 'without-open-telemetry.ts', 'typeorm-transactions.ts', 'nest11-cjs.flavor.ts'],
  },
  'nest12-typeorm1': {
    what:
      'Nest 12 `nest new --type cjs` with typeorm 1.x (registry latest), ioredis 5, typeorm-transactional, @nestjs-cls ' +
      'TypeORM adapter, outbox on PostgreSQL',
    moduleSystem: 'commonjs',
    checks: [
      ...COMMON_CHECKS,
      'metrics-subpath.ts',
      'without-open-telemetry.ts',
      'typeorm-transactions.ts',
      'postgres-server.ts',
      'typeorm-outbox.ts',
      'nest12-typeorm1.flavor.ts',
    ],
  },
  'nest12-drivers': {
    what: 'Nest 12 `nest new --type cjs` with redis 6 (node-redis), @valkey/valkey-glide 2 and iovalkey 0.4, no ioredis',
    moduleSystem: 'commonjs',
    /** Its own checks (driver-checks.ts): the common ones need ioredis and the observability peers. */
    runner: 'driver-checks',
    /**
     * Declarations that stand in for a package the app lacks because the package's own declarations
     * import its types: compiled with, and checked each run to be still needed (else the lane fails,
     * so that they go).
     */
    standIns: ['ioredis-absent.d.ts'],
    checks: [
      'check-list.ts',
      'ioredis-absent.d.ts',
      'redis-server.ts',
      'redis-admin.ts',
      'driver-clients.ts',
      'installed-packages.ts',
      'driver-checks.ts',
      'nest12-drivers.flavor.ts',
    ],
  },
};

class LaneFailure extends Error {}

async function main() {
  const options = parseArguments(process.argv.slice(2));
  const started = performance.now();
  const nodes = options.nodes.length > 0 ? options.nodes : [process.execPath];
  const nodeVersions = new Map();
  for (const node of nodes) nodeVersions.set(node, (await run(node, ['--version'], { cwd: repoRoot, timeoutMs: 30_000 })).output.trim());
  log(`compat lane: ${options.apps.join(', ')}; apps run with ${[...nodeVersions.values()].join(' and ')}; work dir ${workRoot}`);

  mkdirSync(workRoot, { recursive: true });
  let templateProblems = 0;
  if (options.checkTemplates) {
    const problems = templateDrift({ appsDir, workRoot, env: npmEnvironment() });
    for (const problem of problems) log(`template drift: ${problem}`);
    if (problems.length === 0) log("templates: every app still matches its `nest new` template (plus the lane's own changes)");
    templateProblems = problems.length;
  }
  const pack = await packLibrary(options.tarball);
  const results = options.apps.map((app) => ({
    app,
    dir: join(workRoot, app),
    ok: false,
    entry: undefined,
    installSeconds: undefined,
    compileSeconds: undefined,
    runs: [],
    failedSteps: 0,
    problem: undefined,
  }));
  log(`\ninstalling and compiling ${options.jobs === 1 ? 'one app at a time' : `up to ${options.jobs} apps at once`}`);
  await inParallel(results, options.jobs, buildApp);
  for (const result of results) await checkApp(result, nodes, nodeVersions);

  const totalSeconds = (performance.now() - started) / 1000;
  printSummary(pack, results, nodeVersions, totalSeconds);
  if (templateProblems > 0) log(`  ${templateProblems} template difference(s): update tools/compat/apps/ (see above)`);
  const failedApps = results.filter((result) => !result.ok);
  if (failedApps.length === 0 && !options.keep) {
    for (const result of results) rmSync(result.dir, { recursive: true, force: true });
    rmSync(tarballInWorkRoot, { force: true });
    if (pack.packedHere) rmSync(pack.tarball, { force: true });
  } else if (failedApps.length > 0) {
    log(`app directories kept for a look: ${failedApps.map((result) => result.dir).join(', ')}`);
  }
  const passed = results.reduce((sum, result) => sum + result.runs.reduce((n, r) => n + r.passed, 0), 0);
  const failed = results.reduce((sum, result) => sum + result.failedSteps, 0) + templateProblems;
  console.log(`compat: ${passed} passed, ${failed} failed`);
  process.exitCode = failedApps.length === 0 && templateProblems === 0 ? 0 : 1;
}

function parseArguments(args) {
  const options = { apps: [], nodes: [], tarball: undefined, keep: false, jobs: 3, checkTemplates: false };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const value = (name) => {
      if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1);
      const next = args[++i];
      if (next === undefined) usage(`${name} needs a value`);
      return next;
    };
    if (arg === '--node' || arg.startsWith('--node=')) options.nodes.push(resolve(value('--node')));
    else if (arg === '--tarball' || arg.startsWith('--tarball=')) options.tarball = resolve(value('--tarball'));
    else if (arg === '--jobs' || arg.startsWith('--jobs='))
      options.jobs = Number.parseInt(value('--jobs'), 10) || usage('--jobs needs a number');
    else if (arg === '--keep') options.keep = true;
    else if (arg === '--check-templates') options.checkTemplates = true;
    else if (arg === '--help' || arg === '-h') usage();
    else if (arg in APPS) options.apps.push(arg);
    else usage(`unknown app or option ${JSON.stringify(arg)}`);
  }
  if (options.apps.length === 0) options.apps = Object.keys(APPS);
  return options;
}

function usage(problem) {
  if (problem) console.error(`run-compat: ${problem}`);
  console.error(
    `usage: node tools/compat/run-compat.js [${Object.keys(APPS).join('|')}]... [--node <path>]... [--jobs <n>] ` +
      `[--tarball <file>] [--keep] [--check-templates]`,
  );
  process.exit(problem ? 2 : 0);
}

/**
 * `npm pack` of the repository (its prepack builds dist/), or the given tarball; then checks that
 * every file the package.json `exports` map points at is in it.
 */
async function packLibrary(givenTarball) {
  const started = performance.now();
  let tarball = givenTarball;
  let files;
  if (tarball) {
    const listing = await run('tar', ['-tzf', tarball], { cwd: workRoot, timeoutMs: 60_000 });
    files = listing.output
      .split('\n')
      .filter(Boolean)
      .map((path) => path.replace(/^package\//, ''));
  } else {
    log('npm pack (prepack builds dist/) ...');
    const packed = await run('npm', ['pack', '--json', '--pack-destination', workRoot], {
      cwd: repoRoot,
      env: npmEnvironment(),
      timeoutMs: COMPILE_TIMEOUT_MS,
      separateStderr: true,
    });
    if (packed.code !== 0) fail(`npm pack failed (exit ${packed.code}):\n${tail(packed.output + packed.stderr)}`);
    const json = packed.output.slice(packed.output.search(/^\[/m));
    let report;
    try {
      [report] = JSON.parse(json);
    } catch {
      fail(`npm pack printed no JSON report:\n${tail(packed.output + packed.stderr)}`);
    }
    tarball = join(workRoot, report.filename);
    files = report.files.map((file) => file.path);
  }
  const manifest = givenTarball
    ? JSON.parse(
        (await run('tar', ['-xOzf', tarball, 'package/package.json'], { cwd: workRoot, timeoutMs: 60_000, separateStderr: true })).output,
      )
    : JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'));
  const missing = [];
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    const targets = exportTargets(target);
    for (const file of targets) {
      if (!files.includes(file.replace(/^\.\//, ''))) missing.push(`${subpath} -> ${file}`);
    }
  }
  if (missing.length > 0) {
    fail(`the tarball lacks files that package.json "exports" points at:\n  ${missing.join('\n  ')}`);
  }
  copyFileSync(tarball, tarballInWorkRoot);
  const seconds = (performance.now() - started) / 1000;
  log(`packed ${basename(tarball)}: ${files.length} files, every "exports" target present (${seconds.toFixed(1)} s)`);
  return { tarball, packedHere: !givenTarball, files, seconds, exportsCount: Object.keys(manifest.exports ?? {}).length };
}

/** Every file an "exports" entry points at, through nested conditions (import/require, types/default). */
function exportTargets(target) {
  if (typeof target === 'string') return [target];
  return Object.values(target ?? {}).flatMap(exportTargets);
}

/**
 * Copies, installs and compiles one app; never throws (a failure is recorded in `result`). Several
 * of these may run at once (`--jobs`): their log lines carry the app's name.
 */
async function buildApp(result) {
  const { app, dir } = result;
  const spec = APPS[app];
  const say = (message) => log(`  [${app}] ${message}`);
  say(`${spec.what}: npm install ...`);
  try {
    prepareAppDirectory(app, spec, dir);

    const install = await timed(() =>
      run('npm', ['install', '--no-audit', '--no-fund'], { cwd: dir, env: npmEnvironment(), timeoutMs: INSTALL_TIMEOUT_MS }),
    );
    result.installSeconds = install.seconds;
    writeFileSync(join(dir, 'npm-install.log'), install.value.output);
    if (install.value.code !== 0) {
      throw new LaneFailure(
        `npm install failed (exit ${install.value.code}); see ${join(dir, 'npm-install.log')}:\n${tail(install.value.output, 40)}`,
      );
    }
    if (/ERESOLVE|overriding peer dependency|Conflicting peer/i.test(install.value.output)) {
      throw new LaneFailure(`npm install accepted a peer dependency conflict:\n${tail(install.value.output, 40)}`);
    }
    say(`npm install: ${install.seconds.toFixed(1)} s`);

    const typescript = join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
    const compile = await timed(() =>
      run(process.execPath, [typescript, '-p', 'tsconfig.build.json'], { cwd: dir, timeoutMs: COMPILE_TIMEOUT_MS }),
    );
    result.compileSeconds = compile.seconds;
    if (compile.value.code !== 0) {
      throw new LaneFailure(`tsc -p tsconfig.build.json failed (skipLibCheck: false):\n${tail(compile.value.output, 60)}`);
    }
    say(`tsc -p tsconfig.build.json (skipLibCheck false): ${compile.seconds.toFixed(1)} s`);
    if (spec.standIns) await checkStandIns(dir, spec.standIns, say);

    result.entry = ['dist/compat-main.js', 'dist/src/compat-main.js'].map((path) => join(dir, path)).find(existsSync);
    if (!result.entry) throw new LaneFailure('tsc wrote no dist/compat-main.js');
  } catch (error) {
    recordProblem(result, error);
    say(`FAILED: ${result.problem}`);
  }
}

/**
 * Compiles the app once more without its stand-in declarations (see `standIns`): they stay only while
 * the compile fails without them, and the errors it gives are logged (what the package still lacks).
 */
async function checkStandIns(dir, standIns, say) {
  const build = JSON.parse(readFileSync(join(dir, 'tsconfig.build.json'), 'utf8'));
  const probe = join(dir, 'tsconfig.without-stand-ins.json');
  writeFileSync(
    probe,
    JSON.stringify({
      extends: './tsconfig.build.json',
      compilerOptions: { noEmit: true, incremental: false },
      exclude: [...(build.exclude ?? []), ...standIns.map((file) => `src/compat/${file}`)],
    }),
  );
  const typescript = join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
  const compile = await run(process.execPath, [typescript, '-p', probe], { cwd: dir, timeoutMs: COMPILE_TIMEOUT_MS });
  if (compile.code === 0) {
    throw new LaneFailure(`the app compiles without ${standIns.join(', ')}: remove them (and their notes)`);
  }
  const errors = compile.output.split('\n').filter((line) => /error TS\d+/.test(line));
  say(`without ${standIns.join(', ')} (still needed): ${errors.length} errors, e.g.\n      ${errors.slice(0, 4).join('\n      ')}`);
}

/** Runs a built app's checks with each node; never throws. */
async function checkApp(result, nodes, nodeVersions) {
  if (!result.entry) return;
  try {
    for (const node of nodes) {
      log(`\n=== ${result.app}, node ${nodeVersions.get(node)}`);
      const outcome = await runApp(node, result.entry, result.dir);
      if (APPS[result.app].jest) await runJest(node, result.dir, outcome);
      outcome.node = nodeVersions.get(node);
      result.runs.push(outcome);
      if (!outcome.ok) result.failedSteps += Math.max(1, outcome.failed);
    }
    result.ok = result.runs.every((outcome) => outcome.ok);
  } catch (error) {
    recordProblem(result, error);
    log(`  FAILED: ${result.problem}`);
  }
}

function recordProblem(result, error) {
  result.ok = false;
  result.failedSteps += 1;
  result.problem = error instanceof LaneFailure ? error.message : String(error?.stack ?? error);
}

/** Runs `task` over `items`, at most `limit` at a time. */
async function inParallel(items, limit, task) {
  const queue = [...items];
  const workers = Array.from({ length: Math.max(1, Math.min(limit, queue.length)) }, async () => {
    while (queue.length > 0) await task(queue.shift());
  });
  await Promise.all(workers);
}

/** The app's template files, the shared checks it uses (src/compat/), and its entry point. */
function prepareAppDirectory(app, spec, dir) {
  rmSync(dir, { recursive: true, force: true });
  cpSync(join(appsDir, app), dir, { recursive: true });
  mkdirSync(join(dir, 'src', 'compat'), { recursive: true });
  for (const file of spec.checks) copyFileSync(join(appsDir, 'shared', file), join(dir, 'src', 'compat', file));
  const start = spec.moduleSystem === 'esm' ? 'await runCompat(flavor, AppModule);' : 'void runCompat(flavor, AppModule);';
  writeFileSync(
    join(dir, 'src', 'compat-main.ts'),
    [
      '// Written by tools/compat/run-compat.js: runs the compat checks beside the template AppModule.',
      "import { AppModule } from './app.module.js';",
      `import { flavor } from './compat/${app}.flavor.js';`,
      `import { runCompat } from './compat/${spec.runner ?? 'run-checks'}.js';`,
      '',
      start,
      '',
    ].join('\n'),
  );
}

/** Runs the compiled app; its `COMPAT ...` lines are the checks (see apps/shared/check-list.ts). */
async function runApp(node, entry, dir) {
  const outcome = { ok: false, passed: 0, failed: 0, seconds: 0, failures: [], exitedCleanly: false };
  const started = performance.now();
  let summarySeenAt;
  let exitTimer;
  const child = run(node, ['--enable-source-maps', entry], {
    cwd: dir,
    env: { ...cleanEnvironment(), NODE_ENV: 'production' },
    timeoutMs: RUN_TIMEOUT_MS,
    onLine(line) {
      const match = /^COMPAT (ok|FAIL|note|summary) ?(.*)$/.exec(line);
      if (!match) return;
      const [, kind, text] = match;
      if (kind === 'summary') {
        summarySeenAt = performance.now();
        const counts = /(\d+) passed, (\d+) failed/.exec(text);
        if (counts) [outcome.passed, outcome.failed] = [Number(counts[1]), Number(counts[2])];
        // The app must now exit by itself.
        exitTimer = setTimeout(() => child.kill('SIGKILL'), EXIT_GRACE_MS);
        return;
      }
      if (kind === 'FAIL') outcome.failures.push(text.split('\n')[0]);
      log(`  ${kind === 'ok' ? 'ok  ' : kind === 'FAIL' ? 'FAIL' : '    '} ${text}`);
    },
  });
  const { code, signal, output } = await child;
  clearTimeout(exitTimer);
  outcome.seconds = (performance.now() - started) / 1000;
  writeFileSync(join(dir, `run-${basename(node)}-${process.pid}.log`), output);
  if (summarySeenAt === undefined) {
    outcome.failures.push(`no summary line: the app ${signal ? `was killed (${signal})` : `exited with ${code}`} before its checks ended`);
    log(`  FAIL the app ended before its summary (exit ${code ?? signal}); its output:\n${tail(output, 60)}`);
    return outcome;
  }
  outcome.exitedCleanly = signal === null;
  if (!outcome.exitedCleanly) {
    outcome.failures.push(`the process did not exit within ${EXIT_GRACE_MS / 1000} s after its checks (a handle left open)`);
    log(`  FAIL the process did not exit within ${EXIT_GRACE_MS / 1000} s after its checks: something keeps the event loop alive`);
  }
  outcome.ok = outcome.exitedCleanly && code === 0 && outcome.failed === 0 && outcome.passed > 0;
  if (!outcome.ok && outcome.failures.length === 0) outcome.failures.push(`exit code ${code}`);
  return outcome;
}

/**
 * The app's own `jest` (as `npm test` runs it: the template's config in package.json) with `node`;
 * adds its tests to `outcome`: each passed test counts as a check, a failed run fails the app.
 */
async function runJest(node, dir, outcome) {
  log(`  jest (the template's config: ts-jest, CommonJS) ...`);
  const started = performance.now();
  const jest = await run(node, [join(dir, 'node_modules', 'jest', 'bin', 'jest.js'), '--ci', '--colors=false'], {
    cwd: dir,
    timeoutMs: RUN_TIMEOUT_MS,
  });
  writeFileSync(join(dir, `jest-${basename(node)}-${process.pid}.log`), jest.output);
  const count = (word) => Number(new RegExp(`^Tests:.*?(\\d+) ${word}`, 'm').exec(jest.output)?.[1] ?? 0);
  const passed = count('passed');
  const failed = count('failed');
  for (const line of jest.output.split('\n').filter((line) => /^\s+(✓|✕|√|×)/.test(line))) log(`  jest${line}`);
  log(`  jest: ${passed} passed, ${failed} failed, exit ${jest.code} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
  outcome.passed += passed;
  outcome.failed += failed;
  if (jest.code !== 0 || passed === 0) {
    outcome.ok = false;
    outcome.failures.push(`jest exited ${jest.code} with ${passed} passed, ${failed} failed`);
    log(tail(jest.output, 60));
  }
}

function printSummary(pack, results, nodeVersions, totalSeconds) {
  const rows = [['app', 'install', 'compile', ...[...nodeVersions.values()].map((v) => `checks (node ${v})`), 'result']];
  for (const result of results) {
    const seconds = (value) => (value === undefined ? '-' : `${value.toFixed(1)} s`);
    const runs = [...nodeVersions.values()].map((version) => {
      const outcome = result.runs.find((r) => r.node === version);
      if (!outcome) return '-';
      return `${outcome.passed}/${outcome.passed + outcome.failed} passed, ${outcome.seconds.toFixed(1)} s`;
    });
    rows.push([result.app, seconds(result.installSeconds), seconds(result.compileSeconds), ...runs, result.ok ? 'ok' : 'FAILED']);
  }
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  log('\ncompat summary');
  log(`  npm pack: ${pack.seconds.toFixed(1)} s, ${pack.files.length} files, ${pack.exportsCount} exports all present`);
  for (const row of rows) log(`  ${row.map((cell, column) => cell.padEnd(widths[column])).join('  ')}`);
  for (const result of results) {
    if (result.problem) log(`  ${result.app}: ${result.problem.split('\n')[0]}`);
    for (const outcome of result.runs) for (const failure of outcome.failures) log(`  ${result.app} (node ${outcome.node}): ${failure}`);
  }
  log(`  total wall time ${totalSeconds.toFixed(1)} s`);
}

/**
 * The environment for npm: without the npm_* variables an outer `npm run` sets (they would carry
 * the repository's prefix and any flag given to it into the apps' installs), and with the two
 * settings the lane is about pinned off.
 */
function npmEnvironment() {
  return {
    ...cleanEnvironment(),
    npm_config_legacy_peer_deps: 'false',
    npm_config_force: 'false',
    npm_config_update_notifier: 'false',
  };
}

function cleanEnvironment() {
  const keep = new Set(['npm_config_cache', 'npm_config_registry', 'npm_config_userconfig']);
  const env = {};
  for (const [name, value] of Object.entries(process.env)) {
    const lower = name.toLowerCase();
    if (lower.startsWith('npm_') && !keep.has(lower)) continue;
    if (name === 'INIT_CWD') continue;
    env[name] = value;
  }
  // The repository's node_modules/.bin (put first by `npm run`) must not stand in for the apps' own tools.
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((entry) => !entry.startsWith(repoRoot))
    .join(':');
  return env;
}

/**
 * Spawns a command; resolves with its exit code and output (stdout and stderr interleaved unless
 * `separateStderr`). A command still running after `timeoutMs` is killed. The returned promise
 * also has `kill(signal)`.
 */
function run(command, args, { cwd, env = cleanEnvironment(), timeoutMs, separateStderr = false, onLine }) {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let stderr = '';
  let pending = '';
  const onStdout = (chunk) => {
    const text = chunk.toString();
    output += text;
    if (!onLine) return;
    pending += text;
    const lines = pending.split('\n');
    pending = lines.pop();
    for (const line of lines) onLine(line);
  };
  child.stdout.on('data', onStdout);
  child.stderr.on('data', (chunk) => {
    if (separateStderr) stderr += chunk.toString();
    else output += chunk.toString();
  });
  const timer = setTimeout(() => {
    output += `\n[run-compat] ${command} ${args.join(' ')} killed after ${timeoutMs / 1000} s\n`;
    child.kill('SIGKILL');
  }, timeoutMs);
  const promise = new Promise((resolvePromise, reject) => {
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new LaneFailure(`could not start ${command}: ${error.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (onLine && pending) onLine(pending);
      resolvePromise({ code, signal, output, stderr });
    });
  });
  promise.kill = (signal) => child.kill(signal);
  return promise;
}

async function timed(action) {
  const started = performance.now();
  const value = await action();
  return { value, seconds: (performance.now() - started) / 1000 };
}

function tail(text, lines = 30) {
  return text
    .split('\n')
    .filter((line) => !/Unknown user config "nodedir"/.test(line))
    .slice(-lines)
    .join('\n');
}

function fail(message) {
  throw new LaneFailure(message);
}

function log(message) {
  console.log(message);
}

main().catch((error) => {
  console.error(`\ncompat lane FAILED: ${error instanceof LaneFailure ? error.message : (error?.stack ?? error)}`);
  console.log('compat: 0 passed, 1 failed');
  process.exitCode = 1;
});
