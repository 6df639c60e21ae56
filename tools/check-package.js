#!/usr/bin/env node
/**
 * `npm run check:package`: the published shape of the package, as the ecosystem's tools see it.
 *
 * Packs the repository once (`npm pack`, whose prepack builds dist/), then runs on that tarball
 *   - @arethetypeswrong/cli (attw): every entry point of "exports" resolves, with types of the right
 *     module format, under node10, node16 from CommonJS, node16 from ESM and bundler resolution;
 *   - publint --strict: package.json fields and "exports" agree with the files (warnings fail too).
 * Exits non-zero when either finds anything.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const bin = (path) => join(ROOT, 'node_modules', ...path.split('/'));
const out = mkdtempSync(join(tmpdir(), 'check-package-'));
let failed = false;

function step(label, command, args, options = {}) {
  const started = performance.now();
  console.log(`\n── ${label}`);
  const result = spawnSync(command, args, { cwd: ROOT, stdio: options.capture ? 'pipe' : 'inherit', encoding: 'utf8' });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (result.status !== 0) {
    failed = true;
    if (options.capture) process.stdout.write(result.stdout + result.stderr);
    console.log(`── ${label}: FAILED (exit ${result.status}, ${seconds} s)`);
  } else {
    console.log(`── ${label}: ok (${seconds} s)`);
  }
  return result;
}

try {
  const pack = step('npm pack (prepack builds dist/)', 'npm', ['pack', '--json', '--pack-destination', out], { capture: true });
  if (pack.status === 0) {
    const report = JSON.parse(pack.stdout.slice(pack.stdout.search(/^\[/m)));
    const tarball = join(out, report[0].filename);
    console.log(`${report[0].filename}: ${report[0].entryCount} files`);
    step('attw (are the types wrong?)', process.execPath, [
      bin('@arethetypeswrong/cli/dist/index.js'),
      tarball,
      '--format',
      'table-flipped',
    ]);
    step('publint --strict', process.execPath, [bin('publint/src/cli.js'), 'run', '--strict', tarball]);
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
