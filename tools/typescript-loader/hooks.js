/**
 * Module hooks that let Node run this repository's TypeScript as ES modules: fixtures the specs
 * start in child processes, soak workers, benchmarks. Registered by `register.js`:
 *
 *   node --enable-source-maps --import ./tools/typescript-loader/register.js some-file.ts
 *
 * - load: `.ts` files outside node_modules are transpiled one at a time with TypeScript's
 *   `transpileModule` (the tsconfig's options: decorators with their metadata, which Node's own
 *   type stripping does not emit). No type checking: `npm run typecheck` does that.
 * - resolve: a relative `./file.js` that does not exist is `./file.ts` (sources import each other as
 *   `.js`, as ESM needs); `nestjs-redis-lock[/subpath]` is the library's source, as in the specs.
 *
 * Each output is kept on disk, keyed by a hash of the source, the compiler options and the
 * TypeScript version: processes that are killed and respawned many times (soak workers, the fault
 * specs' consumers) only pay for transpiling the library once (~3 s of CPU on a small machine).
 * Cache: $TS_TRANSPILE_CACHE, or <tmpdir>/nestjs-redis-lock-ts-cache. Safe to delete at any time.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(import.meta.url);

/** The package's public entry points, mapped to their sources (as jest.config.js and tsconfig paths do). */
const SELF = new Map([
  ['nestjs-redis-lock', 'lib/index.ts'],
  ['nestjs-redis-lock/metrics', 'lib/observability/metrics/index.ts'],
  ['nestjs-redis-lock/health', 'lib/observability/health/index.ts'],
  ['nestjs-redis-lock/dashboard', 'lib/observability/dashboard/index.ts'],
  ['nestjs-redis-lock/testing', 'lib/testing/index.ts'],
  ['nestjs-redis-lock/outbox/postgres', 'lib/outbox/postgres/index.ts'],
  ['nestjs-redis-lock/transaction/nestjs-cls', 'lib/transaction-adapters/nestjs-cls.ts'],
  ['nestjs-redis-lock/transaction/typeorm-transactional', 'lib/transaction-adapters/typeorm-transactional.ts'],
]);

let ts;
let compilerOptions;
let optionsKey;

function typescript() {
  if (!ts) {
    ts = require('typescript');
    const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
    if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
    const converted = ts.convertCompilerOptionsFromJson(config.config.compilerOptions ?? {}, ROOT);
    compilerOptions = {
      ...converted.options,
      module: ts.ModuleKind.ESNext,
      sourceMap: false,
      inlineSourceMap: true,
      inlineSources: false,
      declaration: false,
      noEmit: false,
    };
  }
  return ts;
}

// Keyed without loading TypeScript: reading its version from package.json costs nothing.
function cacheKeyPrefix() {
  if (!optionsKey) {
    const tsVersion = JSON.parse(readFileSync(require.resolve('typescript/package.json'), 'utf8')).version;
    const tsconfig = readFileSync(join(ROOT, 'tsconfig.json'), 'utf8');
    optionsKey = `esm\n${tsVersion}\n${tsconfig}\n`;
  }
  return optionsKey;
}

const cacheDir = process.env.TS_TRANSPILE_CACHE || join(tmpdir(), 'nestjs-redis-lock-ts-cache');
mkdirSync(cacheDir, { recursive: true });

function transpile(filename) {
  const source = readFileSync(filename, 'utf8');
  const hash = createHash('sha256').update(cacheKeyPrefix()).update(filename).update('\n').update(source).digest('hex');
  const cached = join(cacheDir, `${hash}.js`);
  try {
    return readFileSync(cached, 'utf8');
  } catch {
    const code = typescript().transpileModule(source, { compilerOptions, fileName: filename }).outputText;
    // Written under a private name, then renamed: concurrent processes never read a half-written file.
    const partial = `${cached}.${process.pid}.tmp`;
    try {
      writeFileSync(partial, code);
      renameSync(partial, cached);
    } catch {
      // A read-only or full disk only costs speed.
    }
    return code;
  }
}

export async function resolve(specifier, context, nextResolve) {
  const self = SELF.get(specifier);
  if (self) return { url: pathToFileURL(join(ROOT, self)).href, format: 'module', shortCircuit: true };
  try {
    return await nextResolve(specifier, context);
  } catch (error) {
    const relative = specifier.startsWith('./') || specifier.startsWith('../') || specifier.startsWith('file:');
    if (!relative || !specifier.endsWith('.js') || error?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
  }
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts') || url.includes('/node_modules/')) return nextLoad(url, context);
  return { format: 'module', source: transpile(fileURLToPath(url)), shortCircuit: true };
}
