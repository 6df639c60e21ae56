import { jobOutboxMigration } from 'nestjs-redis-lock/outbox/postgres';

/**
 * The sample's tables. `fence` columns store the fencing token of the last writer. The delay
 * queue's outbox table is created here with the rest, from the package's migration SQL: the way a
 * production app does it (in its migrations), rather than `applyMigrationAtStart`.
 */
export const SCHEMA = `
CREATE TABLE IF NOT EXISTS orders (
  id          TEXT PRIMARY KEY,
  item        TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('pending', 'paid', 'expired')),
  created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
  expires_at  TIMESTAMPTZ NOT NULL,
  paid_at     TIMESTAMPTZ,
  expired_at  TIMESTAMPTZ,
  fence       BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS payments (
  order_id    TEXT NOT NULL REFERENCES orders(id),
  paid_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS fulfilment_steps (
  order_id    TEXT NOT NULL REFERENCES orders(id),
  step        TEXT NOT NULL CHECK (step IN ('reserve', 'ship', 'notify')),
  outcome     TEXT NOT NULL CHECK (outcome IN ('reserved', 'not-stocked', 'shipped', 'notified')),
  instance    TEXT NOT NULL,
  attempt     INTEGER NOT NULL,
  started_at  TIMESTAMPTZ NOT NULL,
  finished_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
  fence       BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (order_id, step)
);
CREATE TABLE IF NOT EXISTS items (
  sku         TEXT PRIMARY KEY,
  stock       INTEGER NOT NULL CHECK (stock >= 0),
  fence       BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS purchases (
  sku         TEXT NOT NULL REFERENCES items(sku),
  buyer       TEXT NOT NULL,
  fence       BIGINT NOT NULL
);
${jobOutboxMigration()}`;
