import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import { text as migrationSql } from './job-outbox.migration.sql.embedded.js';

/** The outbox table's name when none is given. */
export const DEFAULT_OUTBOX_TABLE = 'redis_lock_job_outbox';

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
/** Room for the `_pending_idx` suffix within PostgreSQL's 63-byte identifiers. */
const MAX_TABLE_NAME = 48;

/** A validated table name: `table` or `schema.table`, lower-case identifiers, safe to put in SQL as is. */
export interface OutboxTable {
  /** As written in SQL: `schema.table` or `table`. */
  readonly qualified: string;
  /** The table's own name, without the schema (index and NOTIFY channel names derive from it). */
  readonly name: string;
  /** The LISTEN/NOTIFY channel of inserts. */
  readonly channel: string;
}

/**
 * Checks a table name before it goes into SQL (it cannot be a bind parameter): one or two
 * dot-separated lower-case identifiers, so nothing can be injected through it.
 *
 * @throws InvalidOptionsError naming what is wrong
 */
export function outboxTable(option: string, value: unknown = DEFAULT_OUTBOX_TABLE): OutboxTable {
  const refuse = (problem: string): never => {
    throw new InvalidOptionsError(option, `got ${JSON.stringify(value)}; ${problem}`);
  };
  if (typeof value !== 'string') return refuse("use a table name such as 'redis_lock_job_outbox' or 'jobs.outbox'");
  const parts = value.split('.');
  if (parts.length > 2 || parts.some((part) => !IDENTIFIER.test(part))) {
    return refuse(
      'use `table` or `schema.table`, each part lower-case letters, digits and _ (not starting with a digit); quotes are not accepted',
    );
  }
  const name = parts.at(-1)!;
  if (name.length > MAX_TABLE_NAME || (parts.length === 2 && parts[0].length > 63)) {
    return refuse(`keep the table name to ${MAX_TABLE_NAME} characters (the schema to 63)`);
  }
  return { qualified: value, name, channel: `${parts.join('_').slice(0, 55)}_insert` };
}

/** The shipped migration (the default table's DDL), without its comment lines; made when first needed. */
let shippedMigration: string | undefined;

/**
 * The DDL of the outbox table (idempotent: safe to run again). Run it in a migration of your own:
 * the library never creates the table unless `applyMigrationAtStart` is set (development).
 *
 * Columns: `due_at` is the due time on the database's clock (`clock_timestamp()` at the insert plus
 * the delay), `at_ms` the absolute due time of a job scheduled with `at`; `claimed_until` is the
 * claim deadline of a relay's row claim, `attempts` counts claims, `parked_at`/`last_error` mark a
 * row that cannot be relayed (kept for inspection, never claimed again).
 *
 * @param table `table` or `schema.table` (lower-case identifiers); default `redis_lock_job_outbox`
 * @example
 * import { jobOutboxMigration } from 'nestjs-redis-lock/outbox/postgres';
 * await queryRunner.query(jobOutboxMigration());               // the default table
 * await queryRunner.query(jobOutboxMigration('jobs.outbox'));  // a table of your naming
 */
export function jobOutboxMigration(table: string = DEFAULT_OUTBOX_TABLE): string {
  const t = outboxTable('table', table);
  const schema = t.qualified.includes('.') ? `CREATE SCHEMA IF NOT EXISTS ${t.qualified.split('.')[0]};\n` : '';
  // job-outbox.migration.sql (embedded as job-outbox.migration.sql.embedded.ts) is the one text of the DDL:
  // it names the default table and its index.
  shippedMigration ??= migrationSql.replace(/^--.*\n/gm, '');
  const named = new RegExp(`\\b${DEFAULT_OUTBOX_TABLE}(_pending_idx)?\\b`, 'g');
  return schema + shippedMigration.replace(named, (_, index?: string) => (index ? `${t.name}_pending_idx` : t.qualified));
}
