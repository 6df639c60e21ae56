import { spawnFixture } from '../support/child-process.js';
import { uniquePrefix } from '../support/test-app.js';
import { useLocalRedisServer } from '../support/use-local-redis-server.js';
import { waitFor } from '../support/timing.js';

type Fixture = ReturnType<typeof spawnFixture>;

/**
 * The issue's 10 s outage: every component fails (the unreachable bound is 2 s, the fixture's leases
 * are renewed every 3 s) and the repeats' periodic check (every 5 s) runs during it at least once.
 */
const DOWNTIME_MS = 10_000;
/** The target for a whole outage, from the first failure to the last line of the recovery. */
const MAX_LINES = 12;
const TOPICS = ['outage.a', 'outage.b', 'outage.c', 'outage.repeat'];

/** The lines of `text` that are not the fixture's own markers (`@…`): what the app printed to its log. */
function logLines(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('@'));
}

/**
 * What a production app prints (Nest's logger at log, warn and error) for a Redis outage: an app
 * with consumers, a repeat, a leader and an `@OnOneInstance` method ticking every second (called
 * as `@nestjs/schedule` calls a `@Cron` method, which logs a rejection with its stack), and Redis
 * killed and restarted empty `DOWNTIME_MS` later. The whole outage, until every part works again,
 * reads in a few lines: one when Redis becomes unreachable, naming the cause; one when it is
 * back, naming how long it was gone and what failed meanwhile; the real events of the restart
 * (leases lost with the data) one line each.
 */
describe('A Redis outage in the log', () => {
  const children: Fixture[] = [];
  // Declared before the server: Jest runs afterAll hooks in declaration order, so the apps go first.
  afterAll(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const server = useLocalRedisServer();

  async function outage(args: string[]): Promise<{ lines: string[]; all: string }> {
    const child = spawnFixture('outage-log-app.ts', [server.url, uniquePrefix('outage'), ...args]);
    children.push(child);
    const marks = (from = 0) => child.output().slice(from).split('\n');
    const working = (from: number) => {
      const seen = marks(from);
      return TOPICS.every((topic) => seen.includes(`@ran ${topic}`)) && seen.includes('@tick') && (from > 0 || seen.includes('@leader'));
    };
    // Start-up only (a child compiling its TypeScript, PGlite's WebAssembly): slow on a loaded CI host.
    await waitFor(
      () => working(0),
      90_000,
      () => `the app to run every part:\n${child.output()}`,
    );
    const start = child.output().length;
    await server.restart({ signal: 'SIGKILL', downtimeMs: DOWNTIME_MS });
    // Everything recovered: every consumer and the repeat running again (the repeat once its
    // schedule, lost with the data, is stored again), a tick run, and a leader again (the restarted
    // Redis lost the lease). Each needs Redis back, so the "back" line came before them.
    await waitFor(
      () => working(start) && marks(start).includes('@leader'),
      30_000,
      () => `every part to work again after the outage:\n${child.output().slice(start)}`,
    );
    const lines = logLines(child.output().slice(start));
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    return { lines, all: child.output().slice(start) };
  }

  function expectReadable(lines: string[]): void {
    expect(lines.length).toBeLessThanOrEqual(MAX_LINES);
    const unreachable = lines.filter((line) => / WARN .*Redis at .* is unreachable/.test(line));
    expect(unreachable).toHaveLength(1);
    expect(unreachable[0]).toMatch(/ECONNREFUSED/);
    const back = lines.filter((line) => /Redis .* is reachable again/.test(line));
    expect(back).toHaveLength(1);
    expect(back[0]).toMatch(/after \d+\.\d s/);
    // No stack: no line of a trace, no ERROR (the scheduler's for a rejected tick included).
    expect(lines.filter((line) => /^\s+at /.test(line))).toEqual([]);
    expect(lines.filter((line) => / ERROR /.test(line))).toEqual([]);
  }

  it(
    `reads in at most ${MAX_LINES} lines: one when Redis is unreachable, with the cause; one when it ` +
      `is back, with how long and what failed`,
    async () => {
      const { lines } = await outage([]);
      process.stdout.write(`outage of ${DOWNTIME_MS} ms, ${lines.length} lines:\n${lines.join('\n')}\n`);
      expectReadable(lines);
      // The ticks that came while Redis was out of reach were skipped, and said so in the summary.
      expect(lines.find((line) => /reachable again/.test(line))).toMatch(/@OnOneInstance calls skipped: \d+/);
      expect(lines.find((line) => /reachable again/.test(line))).toMatch(/consumer calls retried: \d+/);
      expect(lines.find((line) => /reachable again/.test(line))).toMatch(/lease renewals failed: \d+/);
    },
    180_000,
  );

  it('reads as well with the outbox relaying jobs committed during the outage', async () => {
    const { lines } = await outage(['outbox']);
    process.stdout.write(`outage of ${DOWNTIME_MS} ms with the outbox, ${lines.length} lines:\n${lines.join('\n')}\n`);
    expectReadable(lines);
    expect(lines.find((line) => /reachable again/.test(line))).toMatch(/outbox relay looks retried: \d+/);
  }, 180_000);
});
