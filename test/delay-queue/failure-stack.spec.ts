import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import type { DelayQueueService, DelayedJob } from '../../lib/index.js';
import { useDelayApp } from './support/delay-test-app.js';
import { waitFor } from '../support/timing.js';
import { failOnUnhandledRejections } from '../support/fail-on-unhandled-rejections.js';

/** A named function, so its frame can be looked for in the stack kept with the job. */
function chargeCardThatFails(): never {
  throw new TypeError('card declined');
}

/** Named functions, so that their frames can be looked for in the stack kept with the job. */
function failWithHugeMessage(): never {
  throw new Error('x'.repeat(20_000));
}
function connectToDatabase(): never {
  throw new TypeError('database unreachable');
}
function saveOrder(): never {
  try {
    connectToDatabase();
  } catch (cause) {
    throw new Error('order not saved', { cause });
  }
}

failOnUnhandledRejections();

describe('a failed job keeps the stack of its error', () => {
  const errors: unknown[][] = [];
  const warnings: unknown[][] = [];
  beforeAll(() => {
    jest.spyOn(Logger.prototype, 'error').mockImplementation((...args: unknown[]) => void errors.push(args));
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((...args: unknown[]) => void warnings.push(args));
  });
  const t = useDelayApp({ delayQueue: { backoff: { delay: 10, factor: 1, jitter: 0 } } });
  let queue: DelayQueueService;
  beforeAll(() => (queue = t.queue));
  afterAll(() => jest.restoreAllMocks());

  const deadLetter = (topic: string, id: string) =>
    waitFor(async () => (await queue.deadLetters(topic)).find((job) => job.id === id), 10_000, `job ${id} to be dead-lettered`);

  it('the dead letter (deadLetters() and get()) carries lastErrorStack beside lastError', async () => {
    const consumer = queue.consume('stack.dead', () => chargeCardThatFails(), { maxAttempts: 2 });
    try {
      const id = await queue.schedule('stack.dead', { order: 1 });
      const dead: DelayedJob = await deadLetter('stack.dead', id);
      expect(dead.lastError).toBe('TypeError: card declined');
      expect(dead.lastErrorStack).toMatch(/^TypeError: card declined\n\s+at chargeCardThatFails /);
      expect((await queue.get('stack.dead', id))?.lastErrorStack).toBe(dead.lastErrorStack);
    } finally {
      await consumer.close();
    }
  });

  it('the failure log lines carry the stack: the retry warning and the dead-letter error', async () => {
    const consumer = queue.consume('stack.log', () => chargeCardThatFails(), { maxAttempts: 2 });
    try {
      const id = await queue.schedule('stack.log', null);
      await deadLetter('stack.log', id);
      const logged = (lines: unknown[][]) =>
        lines.map((args) => args.map(String).join('\n')).filter((line) => line.includes(JSON.stringify(id)));
      await waitFor(() => logged(errors).length > 0, 5_000, 'the dead-letter error line');
      expect(logged(warnings).join('\n')).toMatch(/retrying in .*card declined[\s\S]*at chargeCardThatFails /);
      expect(logged(errors).join('\n')).toMatch(/dead letters[\s\S]*card declined[\s\S]*at chargeCardThatFails /);
    } finally {
      await consumer.close();
    }
  });

  it('a stack is kept to a bounded size; a thrown non-Error has none', async () => {
    const huge = new Error('x'.repeat(50_000));
    const consumer = queue.consume(
      'stack.bounds',
      (payload: string) => {
        if (payload === 'error') throw huge;
        throw 'a plain string';
      },
      { maxAttempts: 1 },
    );
    try {
      const big = await queue.schedule('stack.bounds', 'error');
      const plain = await queue.schedule('stack.bounds', 'string');
      const bigDead = await deadLetter('stack.bounds', big);
      const plainDead = await deadLetter('stack.bounds', plain);
      expect(bigDead.lastErrorStack!.length).toBeLessThanOrEqual(8_001);
      expect(bigDead.lastErrorStack!.startsWith('Error: xxx')).toBe(true);
      expect(plainDead.lastError).toBe('a plain string');
      expect(plainDead.lastErrorStack).toBeUndefined();
    } finally {
      await consumer.close();
    }
  });

  it('a 20 KB message is cut, and the frames after it are kept', async () => {
    const consumer = queue.consume('stack.long', () => failWithHugeMessage(), { maxAttempts: 1 });
    try {
      const dead = await deadLetter('stack.long', await queue.schedule('stack.long', null));
      expect(dead.lastErrorStack!.length).toBeLessThanOrEqual(8_001);
      expect(dead.lastErrorStack!.startsWith('Error: xxx')).toBe(true);
      expect(dead.lastErrorStack).toMatch(/x…\n\s+at failWithHugeMessage /);
    } finally {
      await consumer.close();
    }
  });

  it('the causes follow, as Node prints them ([cause]: …), a cycle among them ending the chain', async () => {
    const cyclic = new Error('first');
    const second = new Error('second', { cause: cyclic });
    (cyclic as { cause?: unknown }).cause = second;
    const consumer = queue.consume(
      'stack.cause',
      (payload: string) => {
        if (payload === 'cycle') throw cyclic;
        saveOrder();
      },
      { maxAttempts: 1 },
    );
    try {
      const dead = await deadLetter('stack.cause', await queue.schedule('stack.cause', 'chain'));
      expect(dead.lastError).toBe('Error: order not saved');
      expect(dead.lastErrorStack).toMatch(
        /^Error: order not saved\n\s+at saveOrder [\s\S]*\n\[cause\]: TypeError: database unreachable\n\s+at connectToDatabase /,
      );
      const cycle = await deadLetter('stack.cause', await queue.schedule('stack.cause', 'cycle'));
      expect(cycle.lastErrorStack!.match(/\[cause\]: /g)).toHaveLength(1);
      expect(cycle.lastErrorStack).toMatch(/\[cause\]: Error: second/);
    } finally {
      await consumer.close();
    }
  });
});
