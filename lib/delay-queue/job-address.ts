import { InvalidJobError } from '../core/errors/invalid-job.error.js';
import { assertValidTopic } from '../core/keys/topic-name.js';

/**
 * Checks a topic and job id that came from outside (a URL, a form) before any Redis call.
 *
 * @throws InvalidTopicError, InvalidJobError
 */
export function assertJobAddress(topic: string, id: string): void {
  assertValidTopic(topic);
  if (typeof id !== 'string' || id.length === 0 || Buffer.byteLength(id) > 1024) {
    throw new InvalidJobError(topic, 'id', 'must be the non-empty id of a job (at most 1024 bytes)');
  }
}
