import { ackJobsScript } from '../../../../lib/delay-queue/scripts/ack-jobs.lua.js';
import { claimDueJobsScript } from '../../../../lib/delay-queue/scripts/claim-due-jobs.lua.js';
import { JobScript } from '../../../../lib/delay-queue/scripts/job-script.js';
import { ALL_DELAY_QUEUE_SCRIPTS } from '../../../../lib/delay-queue/scripts/all-delay-queue-scripts.js';
import { cancelJobScript } from '../../../../lib/delay-queue/scripts/cancel-job.lua.js';
import { cancelWaitingJobScript } from '../../../../lib/delay-queue/scripts/cancel-waiting-job.lua.js';
import { scheduleJobsScript } from '../../../../lib/delay-queue/scripts/schedule-jobs.lua.js';
import { writeOutboxJobScript } from '../../../../lib/delay-queue/scripts/write-outbox-job.lua.js';

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
    expect(
      script.argList({ on: false, label: 'x', max: 3 }, [
        { token: 't1', id: 'a' },
        { id: 'b', token: 't2' },
      ]),
    ).toEqual([3, 'x', 0, 'a', 't1', 'b', 't2']);
  });

  it('names the slots in the Lua it sends, before the body', () => {
    expect(script.source).toBe(
      "\nlocal KEY = { due = KEYS[1], jobs = KEYS[2] }\nlocal ARG = { max = tonumber(ARGV[1]), label = ARGV[2], on = ARGV[3] == '1' }" +
        '\nlocal ITEMS_FROM, ITEMS_STRIDE = 4, 2\nreturn #ARGV',
    );
  });

  it('gives the claim and the acknowledgement fixed slots: the acknowledgements start at the same slot with or without kept jobs', () => {
    expect(claimDueJobsScript.contract.keys).toHaveLength(13);
    expect(claimDueJobsScript.source).toContain('local ACKS_FROM, ACKS_STRIDE = 12, 3');
    expect(ackJobsScript.source).toContain('local ACKS_FROM, ACKS_STRIDE = 4, 3');
    // Every delay-queue script opens with the topic's five keys (topic-base-lua-snippet.ts reads them by position).
    for (const s of [claimDueJobsScript, ackJobsScript]) {
      expect(s.contract.keys.slice(0, 5)).toEqual(['due', 'jobs', 'active', 'dead', 'marker']);
    }
  });

  it('gives every delay-queue script a contract: the topic’s five keys first, and an operation record the sixth slot', () => {
    expect(ALL_DELAY_QUEUE_SCRIPTS.filter((s) => !(s instanceof JobScript)).map((s) => s.name)).toEqual([]);
    const contracted = ALL_DELAY_QUEUE_SCRIPTS.filter((s): s is JobScript<string, never, string, unknown> => s instanceof JobScript);
    for (const s of contracted) {
      const { keys } = s.contract;
      expect({ script: s.name, first: keys.slice(0, 5) }).toEqual({ script: s.name, first: ['due', 'jobs', 'active', 'dead', 'marker'] });
      // topic-base-lua-snippet.ts reads the record (OPERATION) as KEYS[6]: recordedReply, recordReply and the claim's replay.
      if (keys.includes('record')) expect({ script: s.name, slot: keys.indexOf('record') }).toEqual({ script: s.name, slot: 5 });
    }
  });

  it('declares the completed zset and results hash in every script that forgets a kept completion (cancel, replace)', () => {
    const calls = (source: string, name: string) => source.split(`${name}(`).length - source.split(`function ${name}(`).length;
    for (const s of ALL_DELAY_QUEUE_SCRIPTS) {
      // makeRoomFor's own body calls forgetCompleted once.
      const inMakeRoomFor = s.source.includes('function makeRoomFor(') ? 1 : 0;
      const forgets = calls(s.source, 'forgetCompleted') > inMakeRoomFor || calls(s.source, 'makeRoomFor') > 0;
      if (!forgets) continue;
      const keys = s instanceof JobScript ? (s.contract.keys as readonly string[]) : [];
      expect({ script: s.name, keys: keys.filter((key) => key === 'completed' || key === 'results') }).toEqual({
        script: s.name,
        keys: ['completed', 'results'],
      });
    }
    expect(calls(cancelJobScript.source, 'forgetCompleted')).toBe(1);
    expect(calls(scheduleJobsScript.source, 'makeRoomFor')).toBe(1);
  });

  it('decodes the write scripts’ statuses into outcomes', () => {
    expect(scheduleJobsScript.contract.decode([1, 0, 2])).toEqual(['created', 'existing', 'replaced']);
    const fenced = [3, -1, 1, 0, 2].map(writeOutboxJobScript.contract.decode);
    expect(fenced).toEqual(['written-before', 'late', 'created', 'existing', 'replaced']);
    expect([1, -1, 0].map(cancelWaitingJobScript.contract.decode)).toEqual(['cancelled', 'running', 'not-waiting']);
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
