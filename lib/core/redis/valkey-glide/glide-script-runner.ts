import type { Script } from '@valkey/valkey-glide';
import type { RedisScript } from '../redis-script.js';
import type { GlideCommandClient } from './glide-package.js';
import { glidePackage } from './glide-package.js';

/**
 * GLIDE's own script objects, one per script of this library for the life of the process (the
 * scripts are constants, so none is ever released). GLIDE's `invokeScript` sends EVALSHA and, on
 * NOSCRIPT, loads the body and runs it again inside its core: the same contract as EVALSHA-then-EVAL,
 * without the WARN line GLIDE's core prints for every error reply a plain EVALSHA would get after a
 * restart, a failover or SCRIPT FLUSH. On a cluster it routes by the first key.
 */
const scripts = new Map<string, Script>();

function glideScriptOf(script: RedisScript): Script {
  let glideScript = scripts.get(script.sha);
  if (!glideScript) {
    glideScript = new (glidePackage().Script)(script.source);
    scripts.set(script.sha, glideScript);
  }
  return glideScript;
}

/** Runs `script` on `client` by its KEYS and ARGV; rejects with GLIDE's own error (see glide-errors.ts). */
export function invokeScriptOn<T>(
  client: GlideCommandClient,
  script: RedisScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<T> {
  const options = { keys: [...keys], args: args.map(String), decoder: glidePackage().Decoder.String };
  return client.invokeScript(glideScriptOf(script), options) as Promise<T>;
}
