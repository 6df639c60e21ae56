import { MAX_ERROR_MESSAGE_LENGTH } from '../jobs/delay-queue.constants.js';

/** `Name: message` of an error (or its string form), cut to the length kept with a job. */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return message.length > MAX_ERROR_MESSAGE_LENGTH ? `${message.slice(0, MAX_ERROR_MESSAGE_LENGTH)}…` : message;
}
