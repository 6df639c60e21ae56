import { InvalidLockKeyError } from '../../../../lib/index.js';
import { MAX_KEY_PART_CHARS, escapeKeyPart, unescapeKeyPart } from '../../../../lib/core/keys/escape-key-part.js';
import { escapeTemplateValue } from '../../../../lib/core/keys/escape-template-value.js';
import { RedisKeySpace } from '../../../../lib/core/keys/redis-key-space.js';

/** The text Redis Cluster hashes: between the first `{` and the next `}`. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  return key.slice(open + 1, key.indexOf('}', open + 1));
}

describe('RedisKeySpace: the key layout', () => {
  const keys = new RedisKeySpace('rl');

  it('names every key of a lock under one hash tag', () => {
    expect(keys.lock('order:42')).toEqual({
      name: 'order:42',
      owners: 'rl:lock:{order:42}',
      fence: 'rl:lock:{order:42}:fence',
      wakeChannel: 'rl:lock:{order:42}:wake',
      queue: 'rl:lock:{order:42}:queue',
      timeouts: 'rl:lock:{order:42}:timeouts',
      leases: 'rl:lock:{order:42}:leases',
      waitingWriters: 'rl:lock:{order:42}:writers',
    });
  });

  it('names every key of a semaphore under one hash tag', () => {
    expect(keys.semaphore('pool')).toEqual({
      name: 'pool',
      permits: 'rl:sem:{pool}',
      fence: 'rl:sem:{pool}:fence',
      wakeChannel: 'rl:sem:{pool}:wake',
      grants: 'rl:sem:{pool}:grants',
    });
  });

  it('names every key of a lock kind with a family of its own under one hash tag, as the semaphore family', () => {
    expect(keys.lockKindKeys('latch', 'batch:7', ['fence', 'wake'], 'latch key')).toEqual({
      name: 'batch:7',
      base: 'rl:latch:{batch:7}',
      fence: 'rl:latch:{batch:7}:fence',
      wake: 'rl:latch:{batch:7}:wake',
    });
    expect(keys.lockKindKeys('sem', 'pool', ['fence'], 'semaphore key').base).toBe(keys.semaphore('pool').permits);
    expect(() => keys.lockKindKeys('latch', '', [], 'latch key')).toThrow(InvalidLockKeyError);
  });

  it('names every key of a topic under one hash tag', () => {
    expect(keys.topic('order.expire')).toEqual({
      topic: 'order.expire',
      due: 'rl:dq:{order.expire}:due',
      jobs: 'rl:dq:{order.expire}:jobs',
      active: 'rl:dq:{order.expire}:active',
      dead: 'rl:dq:{order.expire}:dead',
      marker: 'rl:dq:{order.expire}:marker',
      outcomeChannel: 'rl:dq:{order.expire}:outcomes',
      waited: 'rl:dq:{order.expire}:waited',
      fence: 'rl:dq:{order.expire}:fence',
      cancelled: 'rl:dq:{order.expire}:cancelled',
      cancelChannel: 'rl:dq:{order.expire}:cancel',
      completed: 'rl:dq:{order.expire}:completed',
      results: 'rl:dq:{order.expire}:results',
      paused: 'rl:dq:{order.expire}:paused',
      rateLog: 'rl:dq:{order.expire}:rate',
      blocked: 'rl:dq:{order.expire}:blocked',
      drained: 'rl:dq:{order.expire}:drained',
      groupsReady: 'rl:dq:{order.expire}:groups-ready',
      groupsOut: 'rl:dq:{order.expire}:groups-out',
      groupLimit: 'rl:dq:{order.expire}:group-limit',
      priority: 'rl:dq:{order.expire}:priority',
      prioritized: 'rl:dq:{order.expire}:prioritized',
      repeats: 'rl:dq:{order.expire}:repeats',
      repeatNext: 'rl:dq:{order.expire}:repeat-next',
      repeatLast: 'rl:dq:{order.expire}:repeat-last',
      repeatRemoved: 'rl:dq:{order.expire}:repeat-removed',
      repeatDefined: 'rl:dq:{order.expire}:repeat-defined',
      repeatRuns: 'rl:dq:{order.expire}:repeat-runs',
      logsPrefix: 'rl:dq:{order.expire}:logs:',
    });
  });

  it('names the group and pause keys as the scripts derive them from the jobs key (group-lua-snippet.ts)', () => {
    for (const topic of ['order.expire', 'a}b{c', 'hot#2']) {
      const k = keys.topic(topic);
      const shard = k.jobs.slice(0, -':jobs'.length);
      expect([k.groupsReady, k.groupsOut, k.groupLimit, k.paused]).toEqual(
        [':groups-ready', ':groups-out', ':group-limit', ':paused'].map((s) => shard + s),
      );
      expect(k.logsPrefix).toBe(`${shard}:logs:`); // logsKey in topic-base-lua-snippet.ts
    }
  });

  it('names the priority keys as the scripts derive them from the jobs key (topic-base-lua-snippet.ts)', () => {
    for (const topic of ['order.expire', 'a}b{c', 'hot#2']) {
      const k = keys.topic(topic);
      const shard = k.jobs.slice(0, -':jobs'.length);
      expect([k.priority, k.prioritized]).toEqual([`${shard}:priority`, `${shard}:prioritized`]);
    }
  });

  it('keeps a lock, a semaphore and a topic of the same name apart', () => {
    const all = [keys.lock('x'), keys.semaphore('x'), keys.topic('x')].flatMap((k) => Object.values(k).filter((v) => v !== 'x'));
    expect(new Set(all).size).toBe(all.length);
  });

  it('keeps every key of one name in one cluster slot, whatever the name holds', () => {
    for (const name of ['a}b{c', '{x}', '}', 'ünï 😀', '%7B']) {
      const lock = keys.lock(name);
      const tags = [lock.owners, lock.fence, lock.wakeChannel, lock.queue, lock.timeouts, lock.leases, lock.waitingWriters].map(hashTag);
      expect(new Set(tags)).toEqual(new Set([escapeKeyPart(name)]));
    }
  });

  it('names what was wrong with a semaphore or topic name', () => {
    expect(() => keys.semaphore('')).toThrow('Invalid semaphore key "": a semaphore key must not be empty.');
    expect(() => keys.topic('')).toThrow('Invalid topic name "": a topic name must not be empty.');
  });
});

describe('RedisKeySpace: reading names back from keys', () => {
  const keys = new RedisKeySpace('app.v2');

  it.each(['order:42', 'a}b{c', '50%', 'ünï 😀', '__proto__'])('reads the name of %j back from its keys', (name) => {
    expect(keys.lockNameOf(keys.lock(name).owners)).toBe(name);
    expect(keys.semaphoreNameOf(keys.semaphore(name).permits)).toBe(name);
    expect(keys.lockKindNameOf('latch', keys.lockKindKeys('latch', name, [], 'latch key').base, 'latch key')).toBe(name);
  });

  it('reads the topic (or shard) of a jobs hash', () => {
    expect(keys.topicOfJobsKey(keys.topic('order.expire').jobs)).toBe('order.expire');
    expect(keys.topicOfJobsKey(keys.topic('hot#2').jobs)).toBe('hot#2');
  });

  it.each([
    ['another key of the lock', 'app.v2:lock:{a}:fence'],
    ['a key under another prefix', 'other:lock:{a}'],
    ['an empty hash tag', 'app.v2:lock:{}'],
    ['a brace inside the tag', 'app.v2:lock:{a}b}'],
    ['an escape this library never writes (lower case)', 'app.v2:lock:{%7b}'],
    ['a percent sign left unescaped', 'app.v2:lock:{50%}'],
  ])('does not take %s for a lock', (_label, key) => {
    expect(keys.lockNameOf(key)).toBeUndefined();
  });

  it('does not take a semaphore or a lock for a topic', () => {
    expect(keys.topicOfJobsKey(keys.topic('t').due)).toBeUndefined();
    expect(keys.semaphoreNameOf(keys.lock('a').owners)).toBeUndefined();
  });

  it('builds SCAN patterns that match the prefix literally', () => {
    expect(keys.lockOwnersPattern()).toBe('app.v2:lock:{*}');
    expect(keys.semaphorePermitsPattern()).toBe('app.v2:sem:{*}');
    expect(keys.lockKindPattern('latch')).toBe('app.v2:latch:{*}');
    expect(keys.topicJobsPattern()).toBe('app.v2:dq:{*}:jobs');
    expect(new RedisKeySpace('a*b?[c]').lockOwnersPattern()).toBe('a\\*b\\?\\[c\\]:lock:{*}');
  });
});

describe('escapeKeyPart: a user name inside a hash tag', () => {
  it('percent-encodes only %, { and }', () => {
    expect(escapeKeyPart('a}b{c')).toBe('a%7Db%7Bc');
    expect(escapeKeyPart('100%')).toBe('100%25');
    expect(escapeKeyPart('order:42 ünï')).toBe('order:42 ünï');
  });

  it('never maps two names to one key', () => {
    const names = ['{', '%7B', '%257B', '%', '%25', '}', '%7D', 'a{', 'a%7B'];
    const escaped = names.map((name) => escapeKeyPart(name));
    expect(new Set(escaped).size).toBe(names.length);
    for (const name of names) expect(unescapeKeyPart(escapeKeyPart(name))).toBe(name);
  });

  it('accepts up to the limit, counted in characters (code points) whatever their UTF-8 bytes', () => {
    expect(escapeKeyPart('x'.repeat(MAX_KEY_PART_CHARS))).toHaveLength(MAX_KEY_PART_CHARS);
    expect(escapeKeyPart('é'.repeat(MAX_KEY_PART_CHARS))).toHaveLength(MAX_KEY_PART_CHARS);
    // 1,024 characters of 4 UTF-8 bytes (2 UTF-16 units) each.
    expect(escapeKeyPart('🔒'.repeat(MAX_KEY_PART_CHARS))).toHaveLength(2 * MAX_KEY_PART_CHARS);
    expect(() => escapeKeyPart('é'.repeat(MAX_KEY_PART_CHARS + 1))).toThrow(InvalidLockKeyError);
    expect(() => escapeKeyPart('🔒'.repeat(MAX_KEY_PART_CHARS + 1))).toThrow('at most 1024 characters');
  });

  it.each<[string, unknown, RegExp]>([
    ['an empty name', '', /must not be empty/],
    ['a name that is not a string', 42, /must be a string/],
    ['a lone surrogate', 'a\uDC00', /well-formed Unicode/],
  ])('refuses %s', (_label, name, message) => {
    expect(() => escapeKeyPart(name)).toThrow(InvalidLockKeyError);
    expect(() => escapeKeyPart(name)).toThrow(message);
  });
});

describe('escapeTemplateValue: a value placed into a key template', () => {
  it('leaves values without %, : or the delimiter unchanged', () => {
    expect(escapeTemplateValue('42')).toBe('42');
    expect(escapeTemplateValue('abc-1_ünï')).toBe('abc-1_ünï');
  });

  it('percent-encodes %, : and the delimiter as UTF-8 bytes', () => {
    expect(escapeTemplateValue('1:2')).toBe('1%3A2');
    expect(escapeTemplateValue('50%')).toBe('50%25');
    expect(escapeTemplateValue('a-b', '-')).toBe('a%2Db');
    expect(escapeTemplateValue('a→b', '→')).toBe('a%E2%86%92b');
  });

  it('keeps argument tuples apart that plain joining would merge', () => {
    const render = (a: string, b: string) => `order:${escapeTemplateValue(a, ':')}:${escapeTemplateValue(b)}`;
    expect(render('1:2', '3')).not.toBe(render('1', '2:3'));
    expect(`order:${escapeTemplateValue('42:refund')}`).not.toBe('order:42:refund');
  });
});
