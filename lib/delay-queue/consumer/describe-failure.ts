import { MAX_ERROR_MESSAGE_LENGTH, MAX_ERROR_STACK_LENGTH } from '../jobs/delay-queue.constants.js';

/** `Name: message` of an error (or its string form), cut to the length kept with a job. */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return message.length > MAX_ERROR_MESSAGE_LENGTH ? `${message.slice(0, MAX_ERROR_MESSAGE_LENGTH)}…` : message;
}

/** The stack of an `Error` (its first line is `Name: message`), cut to the length kept with a job; undefined for anything else. */
export function failureStack(error: unknown): string | undefined {
  const stack = error instanceof Error && typeof error.stack === 'string' && error.stack.length > 0 ? error.stack : undefined;
  if (stack === undefined) return undefined;
  return stack.length > MAX_ERROR_STACK_LENGTH ? `${stack.slice(0, MAX_ERROR_STACK_LENGTH)}…` : stack;
}
