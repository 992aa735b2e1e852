-- 0002-usage.sql (SQLite): metered usage, one row per client-chosen idempotency key and account.
-- SPDX-License-Identifier: GPL-3.0-or-later

CREATE TABLE usage (
  account         TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  adapter_id      TEXT NOT NULL REFERENCES adapters (id),
  version         TEXT NOT NULL,
  tokens          INTEGER NOT NULL CHECK (tokens >= 0),
  received_at     INTEGER NOT NULL,
  PRIMARY KEY (account, idempotency_key)
);
CREATE INDEX usage_by_adapter ON usage (adapter_id);
