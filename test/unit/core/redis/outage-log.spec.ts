import type { Logger } from '@nestjs/common';
import { RedisCommandError } from '../../../../lib/core/errors/redis-command.error.js';
import { RedisConnectionError } from '../../../../lib/core/errors/redis-connection.error.js';
import { isConnectionFailure, RedisOutageLog } from '../../../../lib/core/redis/outage-log.js';
import { sleep } from '../../../support/timing.js';

function recordingLogger(): { logger: Logger; lines: Array<[string, string]> } {
  const lines: Array<[string, string]> = [];
  const at = (level: string) => (message: string) => void lines.push([level, message]);
  return { logger: { log: at('log'), warn: at('warn'), error: at('error'), debug: at('debug') } as unknown as Logger, lines };
}

describe('RedisOutageLog', () => {
  function setUp(down = { value: false }, started = true) {
    const { logger, lines } = recordingLogger();
    const log = new RedisOutageLog(logger, { endpoint: '127.0.0.1:6379', isDown: () => down.value, waitBound: 2_000 });
    if (started) log.start();
    const visible = () => lines.filter(([level]) => level !== 'debug');
    return { log, lines, visible, down };
  }

  it("says nothing before the module passed its bootstrap check: an unreachable Redis then is the bootstrap error's to report", () => {
    const { log, lines, down } = setUp({ value: true }, false);
    log.connectionError('commands', new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    log.unreachable('connect ECONNREFUSED 127.0.0.1:6379');
    expect(log.active).toBe(false);
    expect(log.absorb('consumer calls retried', new RedisConnectionError('unreachable'))).toBe(false);
    down.value = false;
    log.reachable();
    expect(lines).toEqual([]);
    log.start();
    down.value = true;
    log.unreachable('connect ECONNREFUSED 127.0.0.1:6379');
    expect(lines.map(([level]) => level)).toEqual(['warn']);
  });

  it(
    'one WARN when Redis becomes unreachable, naming the cause; one LOG when it is back, with how long ' +
      'and the counts; nothing else, at any level',
    () => {
      const { log, lines, visible, down } = setUp();
      down.value = true;
      log.connectionError('commands', new Error('connect ECONNREFUSED 127.0.0.1:6379'));
      log.connectionError('commands', new Error('connect ECONNREFUSED 127.0.0.1:6379'));
      log.connectionError('blocking reader', new Error('connect ECONNREFUSED 127.0.0.1:6379'));
      log.unreachable('connect ECONNREFUSED 127.0.0.1:6379');
      const failure = new RedisConnectionError('Redis at 127.0.0.1:6379 is unreachable');
      for (let i = 0; i < 3; i++) expect(log.absorb('consumer calls retried', failure)).toBe(true);
      expect(log.absorb('lease renewals failed', failure)).toBe(true);
      expect(log.active).toBe(true);
      down.value = false;
      log.reachable();
      expect(log.active).toBe(false);

      expect(visible()).toHaveLength(2);
      expect(visible()[0][0]).toBe('warn');
      expect(visible()[0][1]).toMatch(
        /^Redis at 127\.0\.0\.1:6379 is unreachable: connect ECONNREFUSED 127\.0\.0\.1:6379\. Calls wait up to 2000 ms/,
      );
      expect(visible()[1][0]).toBe('log');
      expect(visible()[1][1]).toMatch(
        /is reachable again after \d+\.\d s; .*connection errors: 2, consumer calls retried: 3, lease renewals failed: 1\./,
      );
      // Nothing else, not even at debug level (Nest's default logger prints debug): the summary counts them.
      expect(lines).toHaveLength(2);
    },
  );

  it("a failure that is not a connection failure, or with no outage known, is the caller's to log", () => {
    const { log, down } = setUp();
    expect(log.absorb('consumer calls retried', new RedisConnectionError('down'))).toBe(false);
    down.value = true;
    log.unreachable('connect ECONNREFUSED');
    expect(
      log.absorb(
        'consumer calls retried',
        new RedisCommandError('WRONGTYPE Operation against a key holding the wrong kind of value', undefined),
      ),
    ).toBe(false);
    expect(log.absorb('consumer calls retried', new Error('a bug'))).toBe(false);
    expect(log.absorb('consumer calls retried', new Error('Connection is closed.'))).toBe(true);
  });

  it("failures settling just after Redis is back still count as the outage's (at debug)", () => {
    const { log, visible, down } = setUp();
    down.value = true;
    log.unreachable('connect ECONNREFUSED');
    down.value = false;
    log.reachable();
    expect(log.absorb('lease renewals failed', new RedisConnectionError('down'))).toBe(true);
    expect(visible()).toHaveLength(2);
  });

  it('a hiccup of one connection while the command connection is up is warned about, at most once a second', async () => {
    const { log, visible } = setUp();
    log.connectionError('blocking reader', new Error('read ECONNRESET'));
    log.connectionError('blocking reader', new Error('read ECONNRESET'));
    await sleep(150);
    log.connectionError('blocking reader', new Error('read ECONNRESET'));
    await sleep(150);
    expect(visible()).toEqual([['warn', 'Redis blocking reader connection error (127.0.0.1:6379): read ECONNRESET']]);
    expect(log.active).toBe(false);
  });

  it('a connection error that the command connection follows down begins the outage (one WARN, the first error as cause)', async () => {
    const { log, visible, down } = setUp();
    log.connectionError('cancel notices', new Error('read ECONNRESET'));
    down.value = true;
    await sleep(150);
    expect(log.active).toBe(true);
    expect(visible()).toHaveLength(1);
    expect(visible()[0][1]).toMatch(/is unreachable: read ECONNRESET\./);
    log.stop();
  });

  it('tells connection failures from command failures', () => {
    expect(isConnectionFailure(new RedisConnectionError('down'))).toBe(true);
    expect(
      isConnectionFailure(Object.assign(new Error('Reached the max retries per request limit'), { name: 'MaxRetriesPerRequestError' })),
    ).toBe(true);
    expect(isConnectionFailure(new RedisCommandError('NOSCRIPT', undefined))).toBe(false);
    expect(isConnectionFailure('down')).toBe(false);
  });
});
