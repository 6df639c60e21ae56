import { describe, expect, it } from '@jest/globals';
import { embeddedAssets, staleAssets } from '../../tools/embed-assets.js';

/**
 * The dashboard page and the outbox migration reach the code as generated modules (<file>.embedded.ts beside
 * each, tools/embed-assets.js), so that the CommonJS and the ES module builds load them the same way.
 * The committed modules must hold today's text of their files.
 */
describe('the embedded assets', () => {
  it('has a module for the dashboard page and the outbox migration', () => {
    const names = embeddedAssets(process.cwd()).map(({ module }) => module.replace(/.*\/lib\//, 'lib/'));
    expect(names.sort()).toEqual([
      'lib/observability/dashboard/dashboard-page.html.embedded.ts',
      'lib/outbox/postgres/job-outbox.migration.sql.embedded.ts',
    ]);
  });

  it('holds the current text of each file (else: node tools/embed-assets.js)', () => {
    expect(staleAssets(process.cwd()).map(({ module }) => module)).toEqual([]);
  });
});
