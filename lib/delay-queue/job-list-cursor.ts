import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import type { DelayedJobState } from './interfaces/delayed-job.interface.js';
import type { ListPosition } from './scripts/list-jobs.lua.js';

/**
 * Where each shard of a topic stands in one state's listing: `null` from its start, `'done'` when it
 * has nothing after its last page, or the place its next page starts after.
 */
export type ShardListPosition = ListPosition | null | 'done';

/** Format of the cursor text; a cursor of another format is refused, never misread. */
const CURSOR_VERSION = 1;

/** What a `list()` cursor holds: the topic and state it lists, and each shard's place. */
interface CursorContent {
  readonly v: number;
  readonly t: string;
  readonly s: DelayedJobState;
  readonly p: ReadonlyArray<[string, string] | null | 0>;
}

/** The opaque cursor of the page after these places (base64url of JSON, so it fits a URL). */
export function encodeListCursor(topic: string, state: DelayedJobState, places: readonly ShardListPosition[]): string {
  const content: CursorContent = {
    v: CURSOR_VERSION,
    t: topic,
    s: state,
    p: places.map((place) => (place === 'done' ? 0 : place === null ? null : [place.score, place.id])),
  };
  return Buffer.from(JSON.stringify(content), 'utf8').toString('base64url');
}

/**
 * Each shard's place from a cursor `list()` returned for the same topic and state, the topic having
 * `shards` shards.
 *
 * @throws InvalidOptionsError (`list.cursor`) for text that is not such a cursor
 */
export function decodeListCursor(cursor: unknown, topic: string, state: DelayedJobState, shards: number): ShardListPosition[] {
  const refuse = (problem: string): never => {
    throw new InvalidOptionsError(
      'list.cursor',
      `${problem}; pass the \`cursor\` of the previous page of the same topic and state, or none`,
    );
  };
  if (typeof cursor !== 'string' || cursor === '') refuse('must be a non-empty string');
  let content: CursorContent;
  try {
    content = JSON.parse(Buffer.from(cursor as string, 'base64url').toString('utf8')) as CursorContent;
  } catch {
    return refuse('is not a cursor returned by list()');
  }
  if (content === null || typeof content !== 'object' || content.v !== CURSOR_VERSION || !Array.isArray(content.p)) {
    refuse('is not a cursor returned by list() (or one of another version)');
  }
  if (content.t !== topic || content.s !== state) {
    refuse(`was made for topic ${JSON.stringify(content.t)}, state ${JSON.stringify(content.s)}`);
  }
  if (content.p.length !== shards) refuse(`covers ${content.p.length} shards, the topic now has ${shards}`);
  return content.p.map((place) => {
    if (place === 0) return 'done';
    if (place === null) return null;
    const valid = Array.isArray(place) && place.length === 2 && /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(String(place[0]));
    if (!valid || typeof place[1] !== 'string') refuse('has a malformed place');
    return { score: place[0], id: place[1] };
  });
}
