import { JobScript } from './job-script.js';
import { decodeJobRead, LUA_READ_JOB } from './read-job-lua-snippet.js';

/**
 * Reads one job and where it is, in one consistent snapshot. Read-only.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys, the completed zset and the results
 * hash (see complete-job-lua-snippet.ts); the job's id.
 *
 * Returns readJobState's snapshot (read-job-lua-snippet.ts), decoded into a JobRead.
 */
export const readJobScript = new JobScript(
  'readJob',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker', 'completed', 'results'],
    args: { id: 'text' },
    decode: decodeJobRead,
  },
  `
return readJobState(ARG.id)
`,
  [LUA_READ_JOB],
);
