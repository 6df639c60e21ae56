import { describe, expect, it } from '@jest/globals';
import { parseOutcomeNotice } from '../../../../lib/delay-queue/jobs/outcome-notice.js';

/** The notices announceOutcome publishes (scripts/lua-snippets.ts): the id's length is counted in bytes, as Lua's `#`. */
describe('parseOutcomeNotice', () => {
  it('reads each kind, with its id and detail', () => {
    expect(parseOutcomeNotice('c3:abc{"n":1}')).toEqual({ kind: 'completed', id: 'abc', detail: '{"n":1}' });
    expect(parseOutcomeNotice('c3:abc')).toEqual({ kind: 'completed', id: 'abc', detail: '' });
    expect(parseOutcomeNotice('d5:a:b:c"Error: boom"')).toEqual({ kind: 'dead', id: 'a:b:c', detail: '"Error: boom"' });
    expect(parseOutcomeNotice('x2:4211')).toEqual({ kind: 'cancelled', id: '42', detail: '11' });
  });

  it('counts the id in UTF-8 bytes, so an id of any characters is cut where the script cut it', () => {
    const id = 'zamówienie:ż🙂';
    const message = `c${Buffer.byteLength(id)}:${id}"ok"`;
    expect(parseOutcomeNotice(message)).toEqual({ kind: 'completed', id, detail: '"ok"' });
  });

  it('ignores a message of another shape', () => {
    for (const message of ['', 'q3:abc', 'c:abc', 'cx:abc', 'c9:abc', 'c-1:abc']) expect(parseOutcomeNotice(message)).toBeUndefined();
  });
});
