/**
 * Turns a lock key into a metric label: the key's *shape*, never the key itself, so that one
 * label value stands for all `order:123`, `order:456`… and the series count stays bounded.
 */
export type LockKeyClassifier = (key: string) => string;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
// A long hex run with at least one digit: object ids, hashes, hex-encoded ids.
const HEX_ID = /\b(?=[0-9a-f]*\d)[0-9a-f]{12,}\b/gi;
const DIGITS = /\d+/g;

/**
 * The default classifier: UUIDs become `<uuid>`, hex ids of 12+ characters `<hex>`, every other run
 * of digits `<n>`. `order:42` -> `order:<n>`, `user:7f3c…-…:cart` -> `user:<uuid>:cart`.
 * Keys made of free text (emails, names) are *not* generalised: pass your own classifier then.
 */
export function defaultLockKeyPattern(key: string): string {
  return key.replace(UUID, '<uuid>').replace(HEX_ID, '<hex>').replace(DIGITS, '<n>');
}
