import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkDocExamples, documentedPages, tsBlocksOf, wrapMode } from '../../tools/docs-examples/docs-examples.js';

/**
 * Every ```ts block of README.md and docs/*.md compiles against lib/ as a user would paste it
 * (tools/docs-examples/docs-examples.ts, with the shared prelude tools/docs-examples/prelude.d.ts).
 *
 * KNOWN_FAILING lists the blocks (page:first code line) that did not compile when this check was
 * added and are still to be fixed: the list may only shrink. A block not on it that fails, or a block
 * on it that now compiles (remove it from the list), fails this spec.
 */
const KNOWN_FAILING = new Set([
  'README.md:251',
  'docs/delayed-jobs.md:10',
  'docs/delayed-jobs.md:161',
  'docs/delayed-jobs.md:244',
  'docs/delayed-jobs.md:263',
  'docs/delayed-jobs.md:366',
  'docs/locks.md:70',
  'docs/observability.md:159',
  'docs/observability.md:37',
  'docs/observability.md:300',
  'docs/observability.md:335',
  'docs/outbox.md:106',
  'docs/outbox.md:40',
  'docs/outbox.md:94',
  'docs/redis-protocols.md:33',
  'docs/running-at-scale.md:132',
  'docs/running-at-scale.md:20',
  'docs/scheduling.md:19',
  'docs/scheduling.md:263',
  'docs/scheduling.md:355',
  'docs/testing.md:117',
  'docs/testing.md:162',
  'docs/testing.md:45',
  'docs/testing.md:56',
  'docs/testing.md:69',
  'docs/testing.md:99',
  'docs/with-lock-and-transactions.md:110',
  'docs/with-lock-and-transactions.md:196',
  'docs/with-lock-and-transactions.md:250',
  'docs/with-lock-and-transactions.md:273',
  'docs/with-lock-and-transactions.md:306',
]);

const ROOT = process.cwd();

describe('the ```ts blocks of README.md and docs/*.md', () => {
  it('compile against lib/ (but for the blocks still listed as known to fail, which may only shrink)', () => {
    const blocks = documentedPages(ROOT).flatMap((page) => tsBlocksOf(page, readFileSync(join(ROOT, page), 'utf8')));
    const { checked, errors } = checkDocExamples(ROOT);
    expect(checked).toBe(blocks.length);
    const blockOf = (page: string, line: number) =>
      blocks.filter((b) => b.page === page && b.line <= line).sort((a, b) => b.line - a.line)[0];
    const failing = new Map<string, string[]>();
    for (const error of errors) {
      const block = blockOf(error.page, error.line);
      const name = block ? `${block.page}:${block.line}` : `${error.page}:${error.line}`;
      failing.set(name, [...(failing.get(name) ?? []), `${error.page}:${error.line} ${error.message.split('\n')[0]}`]);
    }
    const newlyFailing = [...failing].filter(([name]) => !KNOWN_FAILING.has(name)).flatMap(([, messages]) => messages);
    const nowCompiling = [...KNOWN_FAILING].filter((name) => !failing.has(name));
    expect({ newlyFailing, nowCompiling }).toEqual({ newlyFailing: [], nowCompiling: [] });
  }, 120_000);

  it('finds the blocks and wraps fragments the way a reader would complete them', () => {
    expect(tsBlocksOf('x.md', 'a\n```ts\nconst a = 1;\n```\n```sh\nls\n```\n```typescript\nb;\n```\n')).toEqual([
      { page: 'x.md', line: 3, code: 'const a = 1;' },
      { page: 'x.md', line: 9, code: 'b;' },
    ]);
    expect(wrapMode("import { LockService } from 'nestjs-redis-lock';\nexport class A {}")).toBe('module');
    expect(wrapMode('await using lock = await this.locks.acquire(`order:${id}`);')).toBe('statements');
    expect(wrapMode("@WithLock('order:<0>')\nasync capture(orderId: string) {}")).toBe('class-body');
  });

  it('reports an example that uses a member it never injected (the `this.orders` of the old docs)', () => {
    // The first block of docs/locks.md before it injected `orders`: this check is what catches it.
    const { errors } = checkDocExamples(ROOT, ['test/unit/fixtures/uninjected-example.md']);
    expect(errors.map((e) => `${e.line} ${e.message}`)).toEqual([expect.stringMatching(/^13 TS2339: Property 'orders' does not exist on type 'PaymentsService'/)]);
  }, 120_000);
});
