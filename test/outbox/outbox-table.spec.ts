import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidOptionsError } from '../../lib/index.js';
import { jobOutboxMigration } from '../../lib/outbox/postgres/index.js';
import { DEFAULT_OUTBOX_TABLE, outboxTable } from '../../lib/outbox/postgres/outbox-table.js';
import { rowsOf } from '../../lib/outbox/postgres/sql-executors.js';

describe('outbox table (no database)', () => {
  it('ships the default migration as SQL equal to jobOutboxMigration()', () => {
    const shipped = readFileSync(join(process.cwd(), 'lib/outbox/postgres/job-outbox.migration.sql'), 'utf8');
    expect(shipped.replace(/^--.*\n/gm, '')).toBe(jobOutboxMigration());
    expect(jobOutboxMigration()).toContain(`CREATE TABLE IF NOT EXISTS ${DEFAULT_OUTBOX_TABLE} (`);
    expect(jobOutboxMigration()).toContain(
      `CREATE INDEX IF NOT EXISTS ${DEFAULT_OUTBOX_TABLE}_pending_idx ON ${DEFAULT_OUTBOX_TABLE} (created_at)`,
    );
  });

  it('accepts table and schema.table, and derives index and channel names from them', () => {
    expect(outboxTable('t', 'jobs.outbox')).toEqual({ qualified: 'jobs.outbox', name: 'outbox', channel: 'jobs_outbox_insert' });
    expect(jobOutboxMigration('jobs.outbox')).toContain('CREATE SCHEMA IF NOT EXISTS jobs;');
    expect(jobOutboxMigration('jobs.outbox')).toContain('CREATE INDEX IF NOT EXISTS outbox_pending_idx ON jobs.outbox');
    expect(jobOutboxMigration('jobs.outbox')).toContain('CREATE TABLE IF NOT EXISTS jobs.outbox (');
    expect(jobOutboxMigration('jobs.outbox')).not.toContain(DEFAULT_OUTBOX_TABLE);
  });

  it.each([['x; DROP TABLE orders'], ['"quoted"'], ['a.b.c'], ['Upper'], [''], ['1abc'], ['a'.repeat(49)], [null], [42]])(
    'refuses the table name %p',
    (name) => {
      expect(() => outboxTable('PostgresJobOutbox.table', name)).toThrow(InvalidOptionsError);
    },
  );

  it('reads rows from pg/PGlite ({ rows }) and TypeORM (rows, or [rows, count] for UPDATE/DELETE)', () => {
    expect(rowsOf({ rows: [{ a: 1 }] })).toEqual([{ a: 1 }]);
    expect(rowsOf([{ a: 1 }])).toEqual([{ a: 1 }]);
    expect(rowsOf([[{ a: 1 }], 1])).toEqual([{ a: 1 }]);
    expect(rowsOf(undefined)).toEqual([]);
  });
});
