import type * as Glide from '@valkey/valkey-glide';
import { loadDriverPackage } from '../driver-packages.js';

/** The optional peer's module, as this package sees it. */
export type GlidePackage = typeof Glide;
/** A GLIDE command client: standalone or cluster. */
export type GlideCommandClient = Glide.GlideClient | Glide.GlideClusterClient;
/** What builds the module's own GLIDE connections (from the user's `url` or `addresses`). */
export type GlideConfig = Glide.GlideClientConfiguration | Glide.GlideClusterClientConfiguration;

let loaded: GlidePackage | undefined;

/**
 * `@valkey/valkey-glide`, loaded on first use: an optional peer, so nothing in lib/ imports its
 * values statically. Missing, it throws `InvalidOptionsError` naming the package and its install
 * command (driver-packages.ts).
 */
export function glidePackage(): GlidePackage {
  loaded ??= loadDriverPackage('@valkey/valkey-glide') as GlidePackage;
  return loaded;
}
