import type { OutboxRow, OutboxRowKind } from '../../../../lib/index.js';
import { outboxRowKindCode, outboxRowKindOf } from '../../../../lib/core/outbox-port/outbox-row-kind.js';
import { readClaimedRow } from '../../../../lib/delay-queue/outbox-relay/outbox-row-checks.js';

const KINDS: ReadonlyArray<[OutboxRowKind, string]> = [
  ['delay', 'd'],
  ['at', 'a'],
  ['repeat', 'r'],
  ['removeRepeat', 'x'],
];

describe('outbox row kinds: words in TypeScript, one-letter codes in storage', () => {
  it.each(KINDS)('%s is stored as %s, and both read back as the word', (kind, code) => {
    expect(outboxRowKindCode(kind)).toBe(code);
    expect(outboxRowKindOf(code)).toBe(kind);
    expect(outboxRowKindOf(kind)).toBe(kind);
  });

  it('reads nothing else as a kind', () => {
    for (const stored of ['', 'D', 'delayed', 'w', null, undefined, 1]) expect(outboxRowKindOf(stored)).toBeUndefined();
  });

  it("a row a store returns with the previous release's code is written as the kind the code names", () => {
    const row = {
      rowId: 'r1',
      topic: 'orders',
      jobId: 'j1',
      kind: 'd',
      when: 5,
      replace: false,
      body: ',"m":null,"b":null,"e":null,"p":1}',
      attempts: 0,
    };
    expect(readClaimedRow(row as unknown as OutboxRow)).toEqual({ row: { ...row, kind: 'delay' } });
    expect(readClaimedRow({ ...row, kind: 'delay' })).toEqual({ row: { ...row, kind: 'delay' } });
    expect(readClaimedRow({ ...row, kind: 'w' as OutboxRowKind })).toEqual({ problem: 'its due time (kind "w", when 5) cannot be read' });
  });

  it('an overdue delay row (negative delay left) is written as it is, keeping its due time; a negative absolute time is refused', () => {
    const row = {
      rowId: 'r1',
      topic: 'orders',
      jobId: 'j1',
      kind: 'delay' as const,
      when: -2_500,
      replace: false,
      body: ',"m":null,"b":null,"e":null,"p":1}',
      attempts: 0,
    };
    expect(readClaimedRow(row)).toEqual({ row });
    expect(readClaimedRow({ ...row, kind: 'at' })).toEqual({ problem: 'its due time (kind "at", when -2500) cannot be read' });
  });
});
