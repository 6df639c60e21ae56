/*
 * The CommonJS build's copy of build-format.ts (see there): tsconfig.build-cjs.json resolves
 * `./build-format.js` to this file, and tools/copy-assets.js renames its output to build-format.js.
 */

/** Which of the package's builds this copy is. */
export const BUILD_FORMAT: 'esm' | 'commonjs' = 'commonjs';

/** A `require` that resolves from this package's own files (for the optional peers loaded on demand). */
export const packageRequire: NodeJS.Require = require;
