import { createRequire } from 'node:module';

/*
 * The one module whose text differs between the package's two builds. This is the ES module build's
 * copy; the CommonJS build (tsconfig.build-cjs.json) compiles build-format.cjs.ts in its place, and
 * tools/copy-assets.js gives the output this file's name. Both export the same names and types, and
 * nothing else in lib/ may use `import.meta`, `require`, `__dirname` or `__filename`.
 */

/** Which of the package's builds this copy is. */
export const BUILD_FORMAT: 'esm' | 'commonjs' = 'esm';

/** A `require` that resolves from this package's own files (for the optional peers loaded on demand). */
export const packageRequire: NodeJS.Require = createRequire(import.meta.url);
