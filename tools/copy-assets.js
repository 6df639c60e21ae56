#!/usr/bin/env node
// The last step of `npm run build`, after the two compilations (tsconfig.build.json: the ES module
// build in dist/; tsconfig.build-cjs.json: the CommonJS build in dist/cjs/):
//   - dist/cjs/package.json says "type": "commonjs", so Node and TypeScript read dist/cjs/**/*.js
//     and *.d.ts as CommonJS inside this "type": "module" package;
//   - the CommonJS build's copy of lib/core/runtime/build-format.cjs.ts takes the name
//     build-format.js, which every other module of that build requires;
//   - the outbox migration (lib/**/*.sql) is copied to the same place under dist/ for users' own
//     migration tools (the code reads it from its embedded module, tools/embed-assets.js).
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const CJS = join(ROOT, 'dist', 'cjs');

writeFileSync(join(CJS, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);

const runtime = join(CJS, 'core', 'runtime');
for (const suffix of ['.js', '.js.map', '.d.ts']) {
  const from = join(runtime, `build-format.cjs${suffix}`);
  writeFileSync(join(runtime, `build-format${suffix}`), readFileSync(from, 'utf8').replaceAll('build-format.cjs.js', 'build-format.js'));
  rmSync(from);
}

for (const entry of readdirSync(join(ROOT, 'lib'), { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.sql')) continue;
  const source = join(entry.parentPath, entry.name);
  const target = join(ROOT, 'dist', relative(join(ROOT, 'lib'), source));
  mkdirSync(dirname(target), { recursive: true });
  cpSync(source, target);
}
