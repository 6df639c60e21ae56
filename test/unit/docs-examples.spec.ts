import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkDocExamples, documentedPages, tsBlocksOf, wrapMode } from '../../tools/docs-examples/docs-examples.js';

/**
 * Every ```ts block of README.md and docs/*.md compiles against lib/ as a user would paste it
 * (tools/docs-examples/docs-examples.ts, with the shared prelude tools/docs-examples/prelude.d.ts).
 *
 * KNOWN_FAILING lists the blocks that did not compile when this check was added and are still to
 * be fixed, each named by its page and a hash of its code (`page#hash`: an edit elsewhere in the page
 * does not rename it; an edit of the block does, and the block is then checked afresh): the list may
 * only shrink. A block not on it that fails, or a block
 * on it that now compiles (remove it from the list), fails this spec.
 */
const KNOWN_FAILING = new Set([
  'README.md#5982c646',
  'docs/delayed-jobs.md#434194eb',
  'docs/delayed-jobs.md#5a87b7ea',
  'docs/delayed-jobs.md#63a8c6f2',
  'docs/delayed-jobs.md#68634f6a',
  'docs/delayed-jobs.md#68ee92ea',
  'docs/locks.md#4c915700',
  'docs/observability.md#37ecd4a1',
  'docs/observability.md#52115b87',
  'docs/observability.md#66e7a85f',
  'docs/observability.md#ce8e532b',
  'docs/outbox.md#0ca35792',
  'docs/outbox.md#54f42105',
  'docs/outbox.md#fbc6df0f',
  'docs/redis-protocols.md#fa1c6877',
  'docs/running-at-scale.md#a2adc21a',
  'docs/running-at-scale.md#ddd4673f',
  'docs/scheduling.md#4ad27585',
  'docs/scheduling.md#704015ac',
  'docs/scheduling.md#712611f1',
  'docs/testing.md#00d2246f',
  'docs/testing.md#255c30d4',
  'docs/testing.md#2a6a60af',
  'docs/testing.md#825c4472',
  'docs/testing.md#cc644695',
  'docs/testing.md#df2cc51f',
  'docs/with-lock-and-transactions.md#2ac7b3ae',
  'docs/with-lock-and-transactions.md#2e6bc47b',
  'docs/with-lock-and-transactions.md#56d99816',
  'docs/with-lock-and-transactions.md#785f1e17',
  'docs/with-lock-and-transactions.md#a8a1b3d0',
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
      const name = block ? `${block.page}#${createHash('sha1').update(block.code).digest('hex').slice(0, 8)}` : `${error.page}:${error.line}`;
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
