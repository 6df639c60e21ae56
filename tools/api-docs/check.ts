/**
 * `npm run docs:api:check`: fails, naming each, when
 *   - an exported symbol or a public member of the package has no JSDoc (tools/api-docs/public-api.ts,
 *     the same check test/unit/api-docs.spec.ts runs in `npm test`);
 *   - the committed reference in docs/api/ is not what `npm run docs:api` generates from today's
 *     sources (a file missing, extra or different): run `npm run docs:api` and commit docs/api/.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describeUndocumented, readPublicApi } from './public-api.js';

const ROOT = join(import.meta.dirname, '..', '..');
const REFERENCE = join(ROOT, 'docs', 'api');
let failed = false;

const items = readPublicApi(ROOT);
const undocumented = describeUndocumented(items);
if (undocumented.length > 0) {
  failed = true;
  console.error(`${undocumented.length} of ${items.length} public API items have no JSDoc:`);
  for (const line of undocumented) console.error(`  ${line}`);
} else {
  console.log(`All ${items.length} public API items have JSDoc.`);
}

function filesUnder(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (path: string): void => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) walk(full);
      else files.set(relative(dir, full), readFileSync(full, 'utf8'));
    }
  };
  try {
    walk(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return files;
}

const out = mkdtempSync(join(tmpdir(), 'api-reference-'));
try {
  const typedoc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typedoc', 'bin', 'typedoc'), '--out', out], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (typedoc.status !== 0) {
    failed = true;
    console.error(`TypeDoc failed (exit ${typedoc.status}):\n${typedoc.stdout}${typedoc.stderr}`);
  } else {
    const generated = filesUnder(out);
    const committed = filesUnder(REFERENCE);
    const stale = [
      ...[...generated.keys()].filter((file) => !committed.has(file)).map((file) => `missing: docs/api/${file}`),
      ...[...committed.keys()].filter((file) => !generated.has(file)).map((file) => `not generated any more: docs/api/${file}`),
      ...[...generated]
        .filter(([file, text]) => committed.has(file) && committed.get(file) !== text)
        .map(([file]) => `differs: docs/api/${file}`),
    ];
    if (stale.length > 0) {
      failed = true;
      console.error(`docs/api/ is not the reference generated from the sources (run \`npm run docs:api\` and commit docs/api/):`);
      for (const line of stale) console.error(`  ${line}`);
    } else {
      console.log(`docs/api/ is up to date (${generated.size} files).`);
    }
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}

process.exit(failed ? 1 : 0);
