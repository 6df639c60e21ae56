import type { GlideClientConfiguration } from '@valkey/valkey-glide';

/**
 * A GLIDE configuration from a `redis://` or `rediss://` URL: host, port (default 6379), username
 * and password (URL-decoded), database (`/<n>`), TLS for `rediss:`. The same fields serve a
 * cluster's configuration (add `clusterMode` where the caller knows it is one).
 *
 * @example
 * glideConfigFromUrl('rediss://app:s3cret@cache.example:6380/2')
 * // { addresses: [{ host: 'cache.example', port: 6380 }], useTLS: true,
 * //   credentials: { username: 'app', password: 's3cret' }, databaseId: 2 }
 */
export function glideConfigFromUrl(url: string): GlideClientConfiguration {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`Invalid Redis URL ${JSON.stringify(redact(url))}: expected redis://[user:password@]host[:port][/db]`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new TypeError(`Invalid Redis URL ${JSON.stringify(redact(url))}: the scheme must be redis:// or rediss://`);
  }
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1';
  const config: GlideClientConfiguration = { addresses: [{ host, port: parsed.port ? Number(parsed.port) : 6379 }] };
  if (parsed.protocol === 'rediss:') config.useTLS = true;
  const password = decodeURIComponent(parsed.password);
  const username = decodeURIComponent(parsed.username);
  if (password) config.credentials = username ? { username, password } : { password };
  else if (username) throw new TypeError(`Invalid Redis URL ${JSON.stringify(redact(url))}: a username needs a password`);
  const database = parsed.pathname.replace(/^\//, '');
  if (database) {
    if (!/^\d+$/.test(database)) throw new TypeError(`Invalid Redis URL ${JSON.stringify(redact(url))}: the database must be a number`);
    config.databaseId = Number(database);
  }
  return config;
}

/** The URL without its password, for messages. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
