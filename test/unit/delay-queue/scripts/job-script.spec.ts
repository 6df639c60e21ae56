import { ackJobsScript } from '../../../../lib/delay-queue/scripts/ack-jobs.lua.js';
import { claimDueJobsScript } from '../../../../lib/delay-queue/scripts/claim-due-jobs.lua.js';
import { JobScript } from '../../../../lib/delay-queue/scripts/job-script.js';

/* A script's contract names its keys and arguments once, in fixed slots, and decodes its reply. */
describe('JobScript', () => {
  const script = new JobScript(
    'example',
    {
      keys: ['due', 'jobs'],
      args: { max: 'int', label: 'text', on: 'flag' },
      repeated: { name: 'items', fields: ['id', 'token'] },
      decode: (reply) => ({ count: Number(reply) }),
    },
    'return #ARGV',
  );

  it('sends keys and arguments in the contract’s slots, whatever order the caller wrote them in, flags as 1 or 0', () => {
    expect(script.keyList({ jobs: 'j', due: 'd' })).toEqual(['d', 'j']);
    expect(script.argList({ on: true, label: 'x', max: 3 })).toEqual([3, 'x', 1]);
    expect(script.argList({ on: false, label: 'x', max: 3 }, [{ token: 't1', id: 'a' }, { id: 'b', token: 't2' }])).toEqual([
      3, 'x', 0, 'a', 't1', 'b', 't2',
    ]);
  });

  it('names the slots in the Lua it sends, before the body', () => {
    expect(script.source).toBe(
      "\nlocal KEY = { due = KEYS[1], jobs = KEYS[2] }\nlocal ARG = { max = tonumber(ARGV[1]), label = ARGV[2], on = ARGV[3] == '1' }" +
        '\nlocal ITEMS_FROM, ITEMS_STRIDE = 4, 2\nreturn #ARGV',
    );
  });

  it('gives the claim and the acknowledgement fixed slots: the acknowledgements start at the same slot with or without kept jobs', () => {
    expect(claimDueJobsScript.contract.keys).toHaveLength(12);
    expect(claimDueJobsScript.source).toContain('local ACKS_FROM, ACKS_STRIDE = 12, 3');
    expect(ackJobsScript.source).toContain('local ACKS_FROM, ACKS_STRIDE = 4, 3');
    // Every delay-queue script opens with the topic's five keys (topic-base-lua-snippet.ts reads them by position).
    for (const s of [claimDueJobsScript, ackJobsScript]) {
      expect(s.contract.keys.slice(0, 5)).toEqual(['due', 'jobs', 'active', 'dead', 'marker']);
    }
  });

  it('decodes the claim’s reply into named rows', () => {
    const reply = claimDueJobsScript.contract.decode([5_000, 7, 1, 2, ['a', 'body', 2048], ['b', 3, 3, 0], -1, 4_000]);
    expect(reply).toEqual({
      nowUs: 5_000,
      nextWakeMs: 7,
      moreDue: true,
      acked: 2,
      claimed: [{ id: 'a', body: 'body', dueScore: 2048 }],
      recovered: [{ id: 'b', attempts: 3, maxAttempts: 3, requeued: false }],
      nextDueMs: -1,
      claimedUs: 4_000,
    });
  });
});
