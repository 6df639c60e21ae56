/**
 * Turns a lock key into a metric label: the key's *shape*, never the key itself, so that one
 * label value stands for all `order:123`, `order:456`… and the series count stays bounded.
 *
 * @inline
 */
export type LockKeyClassifier = (key: string) => string;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
// A long hex run with at least one digit: object ids, hashes, hex-encoded ids.
const HEX_ID = /\b(?=[0-9a-f]*\d)[0-9a-f]{12,}\b/gi;
const DIGITS = /\d+/g;

/**
 * The default classifier: the key's first segment (the text before the first `:`) followed by `:*`,
 * so whatever follows the namespace (ids, names, emails: `account:a`, `user:alice@example.com:cart`)
 * never becomes a label value. In what is kept, UUIDs become `<uuid>`, hex ids of 12+ characters
 * `<hex>` and other runs of digits `<n>`: `order:42` -> `order:*`, `job-42` -> `job-<n>`. A key
 * without `:` is kept whole (folded): use such keys for fixed names, or pass `keyPattern`.
 */
export function defaultLockKeyPattern(key: string): string {
  const colon = key.indexOf(':');
  const namespace = (colon < 0 ? key : key.slice(0, colon)).replace(UUID, '<uuid>').replace(HEX_ID, '<hex>').replace(DIGITS, '<n>');
  return colon < 0 ? namespace : `${namespace}:*`;
}
