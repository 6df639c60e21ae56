/**
 * `node --import ./tools/typescript-loader/register.js file.ts`: runs this repository's TypeScript
 * (fixtures, soak workers, benchmarks) as ES modules. See hooks.js for what the hooks do.
 */
import { register } from 'node:module';

register('./hooks.js', import.meta.url);
