import { join } from 'node:path';
import { TYPESCRIPT_NODE_ARGS } from '../../support/child-process.js';

/** Node's arguments that run the sample app's entry point (sample-app/src/main.ts) as an instance of its own. */
export const SAMPLE_APP_MAIN: readonly string[] = [
  ...TYPESCRIPT_NODE_ARGS,
  join(import.meta.dirname, '..', '..', '..', 'sample-app', 'src', 'main.ts'),
];
