/**
 * A diagnostic Jest test environment for "A worker process has failed to exit gracefully" and
 * "Jest did not exit": after a spec file that leaves referenced timers behind, it appends to
 * $LEFTOVER_LOG (default <tmpdir>/nestjs-redis-lock-leftovers.log) each of them with the stack that
 * set it, and the process's active resources. Not used by default:
 *
 *   npm test -- --testEnvironment=./test/support/leftover-handles-environment.js
 *
 * It found shutdown-redis-down.spec's uncleared sleep(20_000). Timers set outside the spec's module
 * registry (Node internals, ioredis' socket timers) are not seen; the process's active resources,
 * logged beside them, show those by type.
 */
import { TestEnvironment } from 'jest-environment-node';
import { appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LOG = process.env.LEFTOVER_LOG ?? join(tmpdir(), 'nestjs-redis-lock-leftovers.log');

export default class LeftoverHandlesEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.file = context.testPath;
  }

  async setup() {
    await super.setup();
    const global = this.global;
    const live = (this.live = new Map());
    const { setTimeout: set, setInterval: every, clearTimeout: clear, clearInterval: clearEvery } = global;
    const where = () =>
      new Error().stack
        .split('\n')
        .slice(3, 9)
        .map((line) => line.trim())
        .join(' < ');
    global.setTimeout = function (fn, ms, ...args) {
      const timer = set(
        (...a) => {
          live.delete(timer);
          return fn(...a);
        },
        ms,
        ...args,
      );
      live.set(timer, { kind: 'setTimeout', ms, where: where() });
      return timer;
    };
    global.setInterval = function (fn, ms, ...args) {
      const timer = every(fn, ms, ...args);
      live.set(timer, { kind: 'setInterval', ms, where: where() });
      return timer;
    };
    global.clearTimeout = (timer) => (live.delete(timer), clear(timer));
    global.clearInterval = (timer) => (live.delete(timer), clearEvery(timer));
  }

  async teardown() {
    const lines = [];
    for (const [timer, { kind, ms, where }] of this.live) {
      if (typeof timer?.hasRef === 'function' && !timer.hasRef()) continue;
      lines.push(`  ${kind}(…, ${ms}) at ${where}`);
    }
    await super.teardown();
    const resources = process.getActiveResourcesInfo().filter((type) => type !== 'PipeWrap');
    if (lines.length > 0) {
      appendFileSync(LOG, `${this.file} (pid ${process.pid}): active ${JSON.stringify(resources)}\n${lines.join('\n')}\n`);
    }
  }
}
