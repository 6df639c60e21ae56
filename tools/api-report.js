#!/usr/bin/env node
/**
 * The API reports (API Extractor): one `etc/<entry>.api.md` per entry point of package.json
 * "exports", committed, so every change to the public surface shows in review.
 *
 *   npm run api:check    fails when a report differs from the code, or when a type reachable from an
 *                        entry point is not exported from it (ae-forgotten-export), or an @internal
 *                        name leaks (ae-internal-missing-underscore is off: see api-extractor.json)
 *   npm run api:update   rewrites the reports from the code (then review and commit etc/)
 *
 * Reads the ES module build's declarations, compiled here with `stripInternal` into .tmp/api-dts/
 * (the same options as `npm run build`, declarations only), so it needs no dist/.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const DTS = join(ROOT, '.tmp', 'api-dts');
const update = process.argv.includes('--update');
const { Extractor, ExtractorConfig } = createRequire(import.meta.url)('@microsoft/api-extractor');

/** `./metrics` -> `metrics`, `./transaction/nestjs-cls` -> `transaction-nestjs-cls`, `.` -> `nestjs-redis-lock`. */
function reportName(subpath) {
  return subpath === '.' ? 'nestjs-redis-lock' : subpath.slice(2).replaceAll('/', '-');
}

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const entries = Object.entries(manifest.exports)
  .filter(([, target]) => typeof target === 'object')
  .map(([subpath, target]) => ({ subpath, types: target.import.types }));

rmSync(DTS, { recursive: true, force: true });
const tsc = spawnSync(
  process.execPath,
  [
    join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
    '-p',
    'tsconfig.build.json',
    '--emitDeclarationOnly',
    '--declaration',
    '--declarationMap',
    'false',
    '--sourceMap',
    'false',
    '--inlineSources',
    'false',
    '--outDir',
    DTS,
  ],
  { cwd: ROOT, stdio: 'inherit' },
);
if (tsc.status !== 0) process.exit(tsc.status ?? 1);

/** The names each entry point exports, read from the declarations by the TypeScript checker. */
const ts = createRequire(import.meta.url)('typescript');
const entryFiles = entries.map(({ types }) => join(DTS, types.replace(/^\.\/dist\//, '')));
const program = ts.createProgram(entryFiles, {
  skipLibCheck: true,
  noEmit: true,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
});
const checker = program.getTypeChecker();
const exportedBy = new Map(
  entries.map(({ subpath }, i) => [
    subpath,
    new Set(checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entryFiles[i]))).map((symbol) => symbol.name)),
  ]),
);

let failed = 0;
for (const { subpath, types } of entries) {
  /**
   * A type one entry point uses and another exports (an add-on's `DelayQueueService`, from the main
   * entry) can be named by users: API Extractor, which sees one entry at a time, would call it forgotten.
   */
  const elsewhere = new Set([...exportedBy].filter(([other]) => other !== subpath).flatMap(([, names]) => [...names]));
  const messageCallback = (message) => {
    if (message.messageId !== 'ae-forgotten-export') return;
    const name = /The symbol "([^"]+)"/.exec(message.text)?.[1];
    if (name !== undefined && elsewhere.has(name) && !exportedBy.get(subpath).has(name)) {
      message.logLevel = 'none';
      message.handled = true;
    }
  };
  const name = reportName(subpath);
  const config = ExtractorConfig.prepare({
    configObject: {
      ...JSON.parse(readFileSync(join(ROOT, 'api-extractor.json'), 'utf8')),
      projectFolder: ROOT,
      mainEntryPointFilePath: join(DTS, types.replace(/^\.\/dist\//, '')),
      apiReport: {
        enabled: true,
        reportFileName: `${name}.api.md`,
        reportFolder: join(ROOT, 'etc'),
        reportTempFolder: join(ROOT, '.tmp', 'api-report'),
      },
    },
    configObjectFullPath: join(ROOT, 'api-extractor.json'),
    packageJsonFullPath: join(ROOT, 'package.json'),
  });
  const result = Extractor.invoke(config, { localBuild: update, showVerboseMessages: false, messageCallback });
  // In --update the report is rewritten (a warning says so); otherwise any difference fails.
  const problems = result.errorCount + (update ? 0 : result.warningCount + (result.apiReportChanged ? 1 : 0));
  if (problems > 0) {
    failed += 1;
    console.error(
      `${subpath}: ${result.errorCount} error(s), ${result.warningCount} warning(s)` +
        (result.apiReportChanged ? `; etc/${name}.api.md differs from the code (npm run api:update, then review and commit it)` : ''),
    );
  } else {
    console.log(`${subpath}: etc/${name}.api.md ${result.apiReportChanged ? 'updated' : 'matches the code'}`);
  }
}
process.exitCode = failed > 0 ? 1 : 0;
