import { createHash } from 'node:crypto';
import type { RedisClient } from '../options/redis-lock-config.js';
import { RedisReachability } from './reachability.js';
import { toRedisLockError } from './redis-errors.js';

/**
 * A piece of Lua several scripts share: `local` values and functions that a script's body calls.
 * A snippet names the snippets its own Lua calls (`requires`), so a script lists only what its body uses.
 */
export interface LuaSnippet {
  readonly name: string;
  readonly source: string;
  readonly requires?: readonly LuaSnippet[];
}

/**
 * A Lua script sent by SHA (EVALSHA) and, only when the server does not know it yet (first use,
 * restart, failover, SCRIPT FLUSH), by body with EVAL, which also caches it. One round trip in the
 * common case, and no dependency on `defineCommand` mutating a client the user may own.
 *
 * Script bodies are constants of this library; user input only ever travels as KEYS and ARGV.
 */
export class RedisScript {
  /** The whole text sent to Redis: the snippets the body uses (each once, before its users), then the body. */
  readonly source: string;
  readonly sha: string;

  /**
   * @param name the operation, as errors name it (`run <name>`)
   * @param body the script's own Lua
   * @param uses the snippets the body calls; the snippets they require come along
   */
  constructor(
    readonly name: string,
    body: string,
    uses: readonly LuaSnippet[] = [],
  ) {
    this.source = snippetsInOrder(uses).map((snippet) => snippet.source).join('') + body;
    this.sha = createHash('sha1').update(this.source).digest('hex');
  }

  /** Runs the script; Redis and connection failures reject with this library's typed errors. */
  run<T = unknown>(client: RedisClient, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    // Plain promise chaining, no async wrapper: this sits on the hot path of every lock operation.
    return (client.evalsha(this.sha, keys.length, ...keys, ...args) as Promise<T>).catch((error: unknown) => {
      if (!isNoScript(error)) throw toRedisLockError(error, `run ${this.name}`, RedisReachability.of(client)?.cause);
      return (client.eval(this.source, keys.length, ...keys, ...args) as Promise<T>).catch((evalError: unknown) => {
        throw toRedisLockError(evalError, `run ${this.name}`, RedisReachability.of(client)?.cause);
      });
    });
  }
}

/** The snippets and all they require, each once, every snippet after the snippets it requires. */
export function snippetsInOrder(uses: readonly LuaSnippet[]): LuaSnippet[] {
  const ordered: LuaSnippet[] = [];
  const visit = (snippet: LuaSnippet): void => {
    if (ordered.includes(snippet)) return;
    snippet.requires?.forEach(visit);
    ordered.push(snippet);
  };
  uses.forEach(visit);
  return ordered;
}

/**
 * Redis's NOSCRIPT reply, also when an ioredis Cluster wraps it ("Too many Cluster redirections.
 * Last error: NOSCRIPT ..."), which happens when a failover promotes a replica whose script cache is empty.
 */
function isNoScript(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.message.startsWith('NOSCRIPT') || /Last error: (ReplyError: )?NOSCRIPT/.test(error.message);
}
