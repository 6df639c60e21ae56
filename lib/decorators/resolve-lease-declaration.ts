import { escapeKeyPart } from '../core/keys/escape-key-part.js';
import { InvalidOptionsError } from '../core/errors/invalid-options.error.js';
import { refuseUnknownKeys } from '../core/options/known-option-keys.js';
import { MAX_LEASE_MS } from '../core/options/option-bounds.js';
import type { LeaseDeclaration } from '../scheduling/lease-declaration.js';

/** Lease of `@OnOneInstance` and `@LeaderElection` when `ttl` is not given (the module's default lock lease). */
const DEFAULT_LEASE_TTL_MS = 30_000;

/** Shortest `ttl` accepted: the lease is renewed every third of it, and a loaded event loop needs slack. */
const MIN_LEASE_TTL_MS = 100;

/**
 * Validates a decorator's key and ttl when the decorator is applied, so a bad value stops the
 * application as soon as the class is loaded, naming the class and method. `extraKeys` are the
 * other lock names derived from the key (the run lock of `@OnOneInstance`), checked as well.
 */
export function resolveLeaseDeclaration(
  options: { key?: unknown; ttl?: unknown },
  known: readonly string[],
  defaultKey: string,
  location: string,
  derivedKeys: (key: string) => string[] = () => [],
): LeaseDeclaration {
  const invalid = (option: string, problem: string) => new InvalidOptionsError(option, `${problem} (in ${location})`);
  if (typeof options !== 'object' || options === null) throw invalid('options', 'expected an object');
  refuseUnknownKeys(
    (option, problem) => {
      throw invalid(option, problem);
    },
    '',
    options,
    known,
  );
  const key = options.key ?? defaultKey;
  for (const name of [key, ...(typeof key === 'string' ? derivedKeys(key) : [])]) {
    try {
      escapeKeyPart(name);
    } catch (error) {
      throw invalid('key', (error as Error).message.replace(/\.$/, ''));
    }
  }
  const ttl = options.ttl ?? DEFAULT_LEASE_TTL_MS;
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl < MIN_LEASE_TTL_MS || ttl > MAX_LEASE_MS) {
    throw invalid('ttl', `got ${String(ttl)}; use a number of milliseconds from ${MIN_LEASE_TTL_MS} to ${MAX_LEASE_MS}`);
  }
  return { key: key as string, ttl: Math.floor(ttl), location };
}
