-- 0002-usage.sql (PostgreSQL): metered usage, one row per client-chosen idempotency key
-- and account.  The primary key is what keeps a record exactly once when several
-- servers receive the same retry: INSERT … ON CONFLICT DO NOTHING waits for the
-- other writer's transaction and then does nothing.
-- SPDX-License-Identifier: GPL-3.0-or-later

CREATE TABLE usage (
  account         TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  adapter_id      TEXT COLLATE "C" NOT NULL REFERENCES adapters (id),
  version         TEXT NOT NULL,
  tokens          BIGINT NOT NULL CHECK (tokens >= 0),
  received_at     BIGINT NOT NULL,
  PRIMARY KEY (account, idempotency_key)
);
CREATE INDEX usage_by_adapter ON usage (adapter_id);
