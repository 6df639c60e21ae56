'use strict';
/**
 * A `require` hook for `.ts` files, for processes that are started over and over: soak workers and
 * the fault specs' consumer fixtures, which are killed with SIGKILL and respawned many times.
 *
 * It does what `ts-node/register/transpile-only` does (TypeScript's `transpileModule`, one file at a
 * time, no type checking: `npm run typecheck` does that) but keeps each output on disk, keyed by a
 * hash of the source, the compiler options and the TypeScript version. Only the first process pays
 * for transpiling the library (~3 s of CPU on a small machine); the next ones start in well under a
 * second, which matters on a loaded 2-core CI runner.
 *
 * Usage: node --enable-source-maps -r ./tools/soak/cached-ts-register.js some-file.ts
 * Cache: $TS_TRANSPILE_CACHE, or <tmpdir>/nestjs-redis-lock-ts-cache. Safe to delete at any time.
 */
const { createHash } = require('node:crypto');
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const ROOT = join(__dirname, '..', '..');
let ts;
let compilerOptions;
let optionsKey;

function typescript() {
  if (!ts) {
    ts = require('typescript');
    const configPath = join(ROOT, 'tsconfig.json');
    const config = ts.readConfigFile(configPath, ts.sys.readFile);
    if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, '\n'));
    const converted = ts.convertCompilerOptionsFromJson(config.config.compilerOptions ?? {}, ROOT);
    compilerOptions = {
      ...converted.options,
      module: ts.ModuleKind.CommonJS,
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
    optionsKey = `${tsVersion}\n${tsconfig}\n`;
  }
  return optionsKey;
}

const cacheDir = process.env.TS_TRANSPILE_CACHE || join(tmpdir(), 'nestjs-redis-lock-ts-cache');
mkdirSync(cacheDir, { recursive: true });

require.extensions['.ts'] = function compileTypeScript(module, filename) {
  const source = readFileSync(filename, 'utf8');
  const hash = createHash('sha256').update(cacheKeyPrefix()).update(filename).update('\n').update(source).digest('hex');
  const cached = join(cacheDir, `${hash}.js`);
  let code;
  try {
    code = readFileSync(cached, 'utf8');
  } catch {
    const compiler = typescript();
    code = compiler.transpileModule(source, { compilerOptions, fileName: filename }).outputText;
    // Written under a private name, then renamed: concurrent processes never read a half-written file.
    const partial = `${cached}.${process.pid}.tmp`;
    try {
      writeFileSync(partial, code);
      renameSync(partial, cached);
    } catch {
      // A read-only or full disk only costs speed.
    }
  }
  module._compile(code, filename);
};
