import { createHash } from 'node:crypto';
import type { RedisClient } from '../options/redis-lock-config.js';
import { runScriptOn } from './ioredis-script-runner.js';
import type { RedisTransport } from './redis-transport.js';

type ScriptTransport = Pick<RedisTransport, 'runScript'>;

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
 * A Lua script: its text and SHA. A transport sends it by SHA (EVALSHA) and by body only when the
 * server does not know it yet (see `RedisTransport.runScript`).
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
    this.source =
      snippetsInOrder(uses)
        .map((snippet) => snippet.source)
        .join('') + body;
    this.sha = createHash('sha1').update(this.source).digest('hex');
  }

  /**
   * Runs the script through a transport (`RedisConnection`), or on an ioredis client directly;
   * Redis and connection failures reject with this library's typed errors.
   */
  run<T = unknown>(target: RedisClient | ScriptTransport, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    const transport = target as Partial<ScriptTransport>;
    if (typeof transport.runScript === 'function') return transport.runScript<T>(this, keys, args);
    return runScriptOn<T>(target as RedisClient, this, keys, args);
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
