import type { TransportSource } from '../../options/transport-source.js';
import type { GlideCommandClient, GlideConfig } from './glide-package.js';
import type { GlideTransportSource } from './glide-transport.js';
import { glideConfigFromUrl } from './glide-url.js';

/** The `redis` option of the valkey-glide driver, as `transportSourceOf` reads it. */
export type GlideOptionSource = Extract<TransportSource, { driver: 'valkey-glide' }>;

/**
 * What `GlideTransport` is built from, from the `redis` option: the GLIDE configuration of the
 * module's own connections (`url`, or `addresses`, with the other GLIDE options passed on), the
 * user's client if any, and whether it is a cluster. Without `url` or `addresses`, GLIDE's own
 * default (a server on localhost:6379).
 */
export function glideTransportSource(source: GlideOptionSource): GlideTransportSource {
  const address = source.url
    ? glideConfigFromUrl(source.url)
    : { addresses: (source.addresses ?? [{ host: 'localhost', port: 6379 }]).map((a) => ({ host: a.host, port: a.port })) };
  const config = { ...(source.options as Partial<GlideConfig>), ...address, clusterMode: source.cluster } as GlideConfig & {
    clusterMode: boolean;
  };
  return { client: source.client as GlideCommandClient | undefined, config };
}
