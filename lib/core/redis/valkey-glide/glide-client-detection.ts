import type { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import type { GlideCommandClient } from './glide-package.js';

/**
 * The names of `value`'s class and of every class it extends (a user may subclass a client). No
 * `instanceof`: the optional package is not loaded to recognise a client, and an application may
 * hold a client of another copy of it.
 */
function classNames(value: unknown): string[] {
  const names: string[] = [];
  for (let proto = Object.getPrototypeOf(value); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    const name = (proto as { constructor?: { name?: unknown } }).constructor?.name;
    if (typeof name === 'string') names.push(name);
  }
  return names;
}

function looksLikeGlide(value: unknown, className: string): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const client = value as Record<string, unknown>;
  return typeof client.customCommand === 'function' && typeof client.invokeScript === 'function' && classNames(value).includes(className);
}

/** A Valkey GLIDE standalone client (`GlideClient`), recognised by its shape and class name. */
export function isGlideClient(value: unknown): value is GlideClient {
  return looksLikeGlide(value, 'GlideClient');
}

/** A Valkey GLIDE cluster client (`GlideClusterClient`), recognised by its shape and class name. */
export function isGlideClusterClient(value: unknown): value is GlideClusterClient {
  return looksLikeGlide(value, 'GlideClusterClient');
}

/** Either kind of GLIDE client. */
export function isAnyGlideClient(value: unknown): value is GlideCommandClient {
  return isGlideClient(value) || isGlideClusterClient(value);
}
