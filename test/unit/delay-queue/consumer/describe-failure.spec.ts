import { describeFailure, failureStack } from '../../../../lib/delay-queue/consumer/describe-failure.js';
import { UNPRINTABLE_FAILURE } from '../../../../lib/core/errors/error-message.js';
import { MAX_ERROR_MESSAGE_LENGTH, MAX_ERROR_STACK_LENGTH } from '../../../../lib/delay-queue/jobs/delay-queue.constants.js';

/** A thrown value whose every printable part throws when read. */
function unprintable(): unknown {
  return {
    get message(): string {
      throw new Error('message getter');
    },
    toString(): string {
      throw new Error('toString');
    },
  };
}

describe('describeFailure', () => {
  it('is `Name: message` for an error and the string form of anything else', () => {
    expect(describeFailure(new TypeError('bad input'))).toBe('TypeError: bad input');
    expect(describeFailure('plain text')).toBe('plain text');
    expect(describeFailure(42)).toBe('42');
    expect(describeFailure(undefined)).toBe('undefined');
  });

  it('cuts a long message to the length kept with a job', () => {
    const kept = describeFailure(new Error('x'.repeat(MAX_ERROR_MESSAGE_LENGTH * 2)));
    expect(kept).toHaveLength(MAX_ERROR_MESSAGE_LENGTH + 1);
    expect(kept.endsWith('…')).toBe(true);
  });

  it('never throws: a value that cannot be printed is kept as a placeholder', () => {
    expect(describeFailure(unprintable())).toBe(UNPRINTABLE_FAILURE);
    expect(describeFailure(Object.create(null))).toBe(UNPRINTABLE_FAILURE);
    const error = new Error('hidden');
    Object.defineProperty(error, 'message', {
      get() {
        throw new Error('getter');
      },
    });
    expect(describeFailure(error)).toBe(UNPRINTABLE_FAILURE);
  });
});

describe('failureStack', () => {
  it('is the stack and its cause chain, within the bound kept with a job', () => {
    const stack = failureStack(new Error('outer', { cause: new RangeError('inner') }))!;
    expect(stack.startsWith('Error: outer\n    at ')).toBe(true);
    expect(stack).toContain('\n[cause]: RangeError: inner');
    expect(stack.length).toBeLessThanOrEqual(MAX_ERROR_STACK_LENGTH);
  });

  it('is undefined for anything but an error with a stack, and never throws', () => {
    expect(failureStack('text')).toBeUndefined();
    expect(failureStack(unprintable())).toBeUndefined();
    const error = new Error('hostile stack');
    Object.defineProperty(error, 'stack', {
      get() {
        throw new Error('getter');
      },
    });
    expect(failureStack(error)).toBeUndefined();
  });
});
