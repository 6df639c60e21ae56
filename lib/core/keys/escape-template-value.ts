/**
 * Escapes a value placed into a key template (`order:<0>:<1>`) so that distinct argument tuples
 * always give distinct keys.
 *
 * Percent-encoded (UTF-8 bytes, `%XX`): `%` (the escape character), `:` (the usual separator) and
 * `delimiter`, the literal character that follows the placeholder in the template. A value then
 * never contains the text that ends it, so `('1:2', '3')` and `('1', '2:3')` in `order:<0>:<1>`
 * stay apart (`order:1%3A2:3` and `order:1:2%3A3`), and `'42:refund'` in `order:<0>` cannot reach
 * the lock of `order:<0>:refund`. Values without those characters (`42`, `abc-1`) are unchanged.
 * Braces are escaped later with the rest of the key (escapeKeyPart), when it becomes a Redis key.
 */
export function escapeTemplateValue(value: string, delimiter?: string): string {
  let escaped = '';
  let changed = false;
  for (const ch of value) {
    if (ch === '%' || ch === ':' || ch === delimiter) {
      escaped += percentEncode(ch);
      changed = true;
    } else {
      escaped += ch;
    }
  }
  return changed ? escaped : value;
}

function percentEncode(ch: string): string {
  let out = '';
  for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}
