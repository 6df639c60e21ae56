/**
 * GLIDE's reply shapes back to RESP2's, as the ioredis transport returns them. GLIDE's core
 * converts replies per command whatever the protocol: a map (HGETALL, CONFIG GET, ZRANGE …
 * WITHSCORES, ZPOPMIN) arrives as an array of `{ key, value }`, a RESP3 map as a plain object, a set
 * as a `Set`, a score as a JS number. RESP2 sends maps as flat arrays and scores as strings.
 * Script replies are not converted by GLIDE (Lua tables are arrays, nil and false are null), so
 * they need none of this.
 */

/** Commands whose numbers are scores (RESP2: bulk strings), not integers. */
const SCORE_COMMANDS = new Set([
  'zscore',
  'zmscore',
  'zincrby',
  'zrange',
  'zrangebyscore',
  'zrevrange',
  'zrevrangebyscore',
  'zpopmin',
  'zpopmax',
  'bzpopmin',
  'bzpopmax',
  'zrandmember',
  'zunion',
  'zinter',
  'zdiff',
  'incrbyfloat',
  'hincrbyfloat',
]);

/**
 * `reply` of command `name` in the shape the ioredis transport gives it: RESP2's, except HGETALL,
 * which ioredis turns into an object (field -> value) and so do its callers' expectations.
 */
export function toResp2Reply(name: string, reply: unknown): unknown {
  const command = name.toLowerCase();
  const reshaped = reshape(reply, SCORE_COMMANDS.has(command));
  return command === 'hgetall' && Array.isArray(reshaped) ? pairsToObject(reshaped) : reshaped;
}

function pairsToObject(flat: unknown[]): Record<string, unknown> {
  const object: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) object[String(flat[i])] = flat[i + 1];
  return object;
}

function reshape(value: unknown, scores: boolean): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return scores ? formatScore(value) : value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'bigint') return String(value);
  if (typeof value !== 'object' || value instanceof Uint8Array) return value;
  if (value instanceof Set) return [...value].map((item) => reshape(item, scores));
  if (Array.isArray(value)) {
    if (value.length > 0 && value.every(isMapEntry)) {
      return value.flatMap((entry: MapEntry) => [reshape(entry.key, scores), reshape(entry.value, scores)]);
    }
    return value.map((item) => reshape(item, scores));
  }
  if (value instanceof Map) return [...value].flatMap(([key, item]) => [reshape(key, scores), reshape(item, scores)]);
  return Object.entries(value).flatMap(([key, item]) => [key, reshape(item, scores)]);
}

interface MapEntry {
  key: unknown;
  value: unknown;
}

function isMapEntry(value: unknown): value is MapEntry {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 2 && 'key' in value && 'value' in value;
}

/** A score as Redis writes it in RESP2 (`inf`, `-inf`, shortest round-trip decimal otherwise). */
function formatScore(value: number): string {
  if (value === Infinity) return 'inf';
  if (value === -Infinity) return '-inf';
  return String(value);
}
