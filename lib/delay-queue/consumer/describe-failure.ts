import { MAX_ERROR_MESSAGE_LENGTH, MAX_ERROR_STACK_LENGTH } from '../jobs/delay-queue.constants.js';
import { cutAtCharacter } from '../jobs/cut-text.js';
import { UNPRINTABLE_FAILURE } from '../../core/errors/error-message.js';

/** How many `Error.cause` levels are kept after the error itself. */
const MAX_CAUSES = 3;

/**
 * Where a stack's frames begin (V8: lines `    at …`). Spaces and tabs only: `\s` would also match
 * newlines, and a message of many blank lines would make the search quadratic.
 */
const FRAMES = /\n[ \t]+at /;

/**
 * `Name: message` of an error (or its string form), cut to the length kept with a job. Never throws:
 * a handler may throw anything, and its failure is recorded whatever it threw.
 */
export function describeFailure(error: unknown): string {
  let message: string;
  try {
    message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  } catch {
    message = UNPRINTABLE_FAILURE;
  }
  return message.length > MAX_ERROR_MESSAGE_LENGTH ? `${cutAtCharacter(message, MAX_ERROR_MESSAGE_LENGTH)}…` : message;
}

/**
 * The stack of an `Error` (its first line is `Name: message`), then its `cause` chain as Node prints
 * it (`[cause]: <the cause's stack>`, at most `MAX_CAUSES`, a cycle ending it), all within
 * `MAX_ERROR_STACK_LENGTH`: each message part is cut to `MAX_ERROR_MESSAGE_LENGTH` and the frames to
 * whole lines, so a huge message never pushes the frames out. Undefined for anything but an `Error`
 * with a stack, or whose stack, name, message or causes throw when read (never throws).
 */
export function failureStack(error: unknown): string | undefined {
  try {
    return boundedStacks(error);
  } catch {
    return undefined;
  }
}

function boundedStacks(error: unknown): string | undefined {
  if (!(error instanceof Error) || typeof error.stack !== 'string' || error.stack.length === 0) return undefined;
  const sections: string[] = [];
  const seen = new Set<unknown>();
  let budget = MAX_ERROR_STACK_LENGTH;
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && !seen.has(current) && depth <= MAX_CAUSES; depth++) {
    seen.add(current);
    const prefix = depth === 0 ? '' : '\n[cause]: ';
    const more = current.cause instanceof Error && !seen.has(current.cause) && depth < MAX_CAUSES;
    // A quarter of what is left stays for the causes that follow.
    const share = (more ? Math.floor(budget * 0.75) : budget) - prefix.length;
    if (share < 40) break;
    const text = boundedStack(current, share);
    sections.push(prefix + text);
    budget -= prefix.length + text.length;
    current = current.cause;
  }
  return sections.join('');
}

/** One error's stack within `limit` characters: the message part cut first, frames kept as whole lines. */
function boundedStack(error: Error, limit: number): string {
  const stack = typeof error.stack === 'string' && error.stack.length > 0 ? error.stack : `${error.name}: ${error.message}`;
  const at = stack.search(FRAMES);
  const head = at < 0 ? stack : stack.slice(0, at);
  const headLimit = Math.min(MAX_ERROR_MESSAGE_LENGTH, at < 0 ? limit - 1 : Math.floor(limit / 2));
  const keptHead = head.length > headLimit ? `${cutAtCharacter(head, headLimit)}…` : head;
  if (at < 0) return keptHead;
  let room = limit - keptHead.length;
  let frames = '';
  for (const line of stack.slice(at + 1).split('\n')) {
    if (line.length + 1 > room - 6) {
      frames += '\n    …';
      break;
    }
    frames += `\n${line}`;
    room -= line.length + 1;
  }
  return keptHead + frames;
}
