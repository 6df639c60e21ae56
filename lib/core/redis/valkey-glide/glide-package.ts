import type * as Glide from '@valkey/valkey-glide';
import { packageRequire } from '../../runtime/build-format.js';

/** The optional peer's module, as this package sees it. */
export type GlidePackage = typeof Glide;
/** A GLIDE command client: standalone or cluster. */
export type GlideCommandClient = Glide.GlideClient | Glide.GlideClusterClient;
/** What builds the module's own GLIDE connections (from the user's `url` or `addresses`). */
export type GlideConfig = Glide.GlideClientConfiguration | Glide.GlideClusterClientConfiguration;

/** The install command named when the optional peer is missing. */
export const GLIDE_INSTALL = 'npm install @valkey/valkey-glide';

let loaded: GlidePackage | undefined;

/**
 * `@valkey/valkey-glide`, loaded on first use: an optional peer, so nothing in lib/ imports its
 * values statically. Throws (the caller names the install command) when it is not installed.
 */
export function glidePackage(): GlidePackage {
  loaded ??= packageRequire('@valkey/valkey-glide') as GlidePackage;
  return loaded;
}
