import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkDocExamples, documentedPages, importsOf, tsBlocksOf, wrapMode } from '../../tools/docs-examples/docs-examples.js';

/**
 * Every ```ts block of README.md and docs/*.md compiles against lib/ as a user would paste it
 * (tools/docs-examples/docs-examples.ts, with the shared prelude tools/docs-examples/prelude.d.ts).
 */
const ROOT = process.cwd();

describe('the ```ts blocks of README.md and docs/*.md', () => {
  it('compile against lib/', () => {
    const blocks = documentedPages(ROOT).flatMap((page) => tsBlocksOf(page, readFileSync(join(ROOT, page), 'utf8')));
    const { checked, skipped, errors } = checkDocExamples(ROOT);
    expect({ checked, skipped }).toEqual({ checked: blocks.length, skipped: 0 });
    expect(errors.map((e) => `${e.page}:${e.line} ${e.message.split('\n')[0]}`)).toEqual([]);
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

  it('takes an import over several lines whole, and stands in for what a block imports from the app itself', () => {
    const code = [
      'import {',
      '  closeRedisLockTestingModule,',
      '  type TestRedis,',
      "} from 'nestjs-redis-lock/testing';",
      "import { OrdersService } from './app.module';",
      'const x = 1;',
    ].join('\n');
    expect(importsOf(code)).toEqual({
      importLines: new Set([0, 1, 2, 3, 4]),
      packageImports: ["import {\n  closeRedisLockTestingModule,\n  type TestRedis,\n} from 'nestjs-redis-lock/testing';"],
      appNames: ['OrdersService'],
    });
  });

  it('reports an example that uses a member it never injected (the `this.orders` of the old docs)', () => {
    // The first block of docs/locks.md before it injected `orders`: this check is what catches it.
    const { errors } = checkDocExamples(ROOT, ['test/unit/fixtures/uninjected-example.md']);
    expect(errors.map((e) => `${e.line} ${e.message}`)).toEqual([
      expect.stringMatching(/^13 TS2339: Property 'orders' does not exist on type 'PaymentsService'/),
    ]);
  }, 120_000);
});
