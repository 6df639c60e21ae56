-- The outbox table of nestjs-redis-lock's transactional outbox (default name). Idempotent.
-- The one text of the DDL: jobOutboxMigration(table) in outbox-table.ts returns it with your table's name.
CREATE TABLE IF NOT EXISTS redis_lock_job_outbox (
  id            text        PRIMARY KEY,
  topic         text        NOT NULL,
  job_id        text        NOT NULL,
  kind          text        NOT NULL,
  due_at        timestamptz NOT NULL,
  at_ms         bigint,
  replace       boolean     NOT NULL DEFAULT false,
  body          text        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  claimed_until timestamptz,
  attempts      integer     NOT NULL DEFAULT 0,
  parked_at     timestamptz,
  last_error    text
);
CREATE INDEX IF NOT EXISTS redis_lock_job_outbox_pending_idx ON redis_lock_job_outbox (created_at) WHERE parked_at IS NULL;
