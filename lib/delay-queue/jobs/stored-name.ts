import { InvalidJobError } from '../../core/errors/invalid-job.error.js';
import { describeValue } from '../../core/options/option-validation.js';

/**
 * A user's name stored verbatim in a job's header and in a key name (a group, a dedupe key): a
 * string with more than blanks, at most `maxBytes` UTF-8 bytes, without quotes, backslashes, control
 * characters or lone surrogates. `what` names it in the error (`'group name'`), `example` shows one.
 *
 * @throws InvalidJobError naming `path`
 */
export function checkStoredName(topic: string, path: string, value: unknown, maxBytes: number, what: string, example: string): string {
  if (typeof value !== 'string' || value.trim().length === 0) {
    throw new InvalidJobError(topic, path, `is ${describeValue(value)}; use a string with more than blanks, such as '${example}'`);
  }
  if (Buffer.byteLength(value, 'utf8') > maxBytes) {
    throw new InvalidJobError(topic, path, `is longer than ${maxBytes} UTF-8 bytes; use a shorter ${what} (or a hash of it)`);
  }
  // eslint-disable-next-line no-control-regex
  if (/["\\\u0000-\u001f\u007f]/.test(value) || !value.isWellFormed()) {
    throw new InvalidJobError(
      topic,
      path,
      `is ${JSON.stringify(value)}; a ${what} cannot hold quotes, backslashes, control characters or lone surrogates`,
    );
  }
  return value;
}
