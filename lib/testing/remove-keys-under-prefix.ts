import type { ScratchConnection } from '../core/redis/redis-transport.js';

/**
 * Deletes every key a module with `keyPrefix` writes (`<prefix>:lock:{…}`, `:sem:{…}`, `:dq:{…}`,
 * see RedisKeySpace) on every master the connection reaches, and returns how many were deleted.
 *
 * The patterns end in the hash tag's `{`, which no prefix may contain: prefix `a` never matches
 * the keys of prefix `a:b`. One UNLINK per key: on a cluster, keys of different slots cannot
 * share a command even on one node.
 */
export async function removeKeysUnderPrefix(
  connection: Pick<ScratchConnection, 'scanKeys' | 'command'>,
  keyPrefix: string,
): Promise<number> {
  const patterns = ['lock', 'sem', 'dq'].map((kind) => `${escapeGlob(keyPrefix)}:${kind}:{*`);
  let removed = 0;
  for (const pattern of patterns) {
    const { keys } = await connection.scanKeys(pattern, Infinity, Infinity);
    const counts = await Promise.all(keys.map((key) => connection.command('UNLINK', key)));
    for (const count of counts) removed += Number(count);
  }
  return removed;
}

function escapeGlob(literal: string): string {
  return literal.replace(/[*?[\]\\]/g, (ch) => `\\${ch}`);
}
