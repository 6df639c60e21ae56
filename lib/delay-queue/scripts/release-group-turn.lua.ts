import { JobScript } from './job-script.js';
import { LUA_TOPIC_PRELUDE } from './lua-snippets.js';

/**
 * A delivery whose job of a group was cancelled or replaced while it ran reports that its handler
 * has returned: the turn its group kept for it (see group-lua-snippet.ts, groups-held) is released,
 * and the group may start its next job. Sent for every abandoned delivery of a job of a group; a
 * delivery whose claim was not held (visibility lost: the job was taken back, and holds the turn
 * itself) finds nothing to release.
 *
 * KEYS and ARGV by name (the contract below): the five topic keys; the delivery's claim token
 *
 * Returns 1 when a held turn was released, 0 when there was none (never held, released already, or
 * its deadline passed). A second run finds nothing left and changes nothing.
 */
export const releaseGroupTurnScript = new JobScript(
  'releaseGroupTurn',
  {
    keys: ['due', 'jobs', 'active', 'dead', 'marker'],
    args: { token: 'text' },
    decode: (reply) => ({ released: Number(reply) === 1 }),
  },
  `
return releaseHeldTurn(ARG.token) and 1 or 0
`,
  [LUA_TOPIC_PRELUDE],
);
