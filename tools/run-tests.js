#!/usr/bin/env node
/**
 * `npm test`: type-checks, then runs Jest in ESM mode (`--experimental-vm-modules`) on a Node that can
 * run the whole suite. Jest loads an ES module from a CommonJS package (here Nest 12 from
 * `@nestjs-cls/transactional`) only on Node 24.9+; on an older Node this runs the suite on Node 24
 * fetched from the npm registry (tools/fetch-node.js, cached in .cache/), and says so.
 * `TEST_NODE=current` keeps the running Node instead. Arguments are passed to Jest.
 *
 * Before anything else it checks the programs the run's specs need (tools/prerequisites.js:
 * redis-server, PostgreSQL, Chromium): one missing means one message listing each, and exit code 3,
 * without type-checking or running a single spec.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { nodeBinary } from './fetch-node.js';
import { EXIT_MISSING, formatMissing, missingPrerequisites, specFilesOfRun } from './prerequisites.js';

const ROOT = join(import.meta.dirname, '..');
const [major, minor] = process.versions.node.split('.').map(Number);
const runsWholeSuite = major > 24 || (major === 24 && minor >= 9);

function run(command, args) {
  const result = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const jestArgs = process.argv.slice(2);
const missing = missingPrerequisites(specFilesOfRun(jestArgs));
if (missing.length > 0) {
  console.error(formatMissing(missing));
  process.exit(EXIT_MISSING);
}

run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json', '--noEmit']);

let node = process.execPath;
if (!runsWholeSuite && process.env.TEST_NODE !== 'current') {
  console.log(
    `Node ${process.version} cannot run the whole suite under Jest (it needs 24.9+ to load Nest 12 from a CommonJS package); ` +
      'running it on Node 24 from the npm registry. TEST_NODE=current keeps this Node; `npm run test:core` is the lane for Node 20 and 22.',
  );
  node = nodeBinary(24);
}
run(node, [
  '--experimental-vm-modules',
  '--disable-warning=ExperimentalWarning',
  join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'),
  ...jestArgs,
]);
