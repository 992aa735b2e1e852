-- 0001-catalogue.sql (PostgreSQL): publishers, their keys, adapters, versions, files and
-- the search document; the same tables as the SQLite migration of the same number.
-- SPDX-License-Identifier: GPL-3.0-or-later

CREATE TABLE publishers (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE TABLE publisher_keys (
  key_id       TEXT PRIMARY KEY,
  publisher_id TEXT NOT NULL REFERENCES publishers (id),
  algorithm    TEXT NOT NULL DEFAULT 'ed25519',
  public_key   TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  revoked      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX publisher_keys_by_publisher ON publisher_keys (publisher_id);

-- One row per adapter; the searchable attributes are those of the latest version.
-- Ids and names compare byte by byte ("C"), as in SQLite, so pages keep one order everywhere.
-- search_vector stands for SQLite's adapters_fts: name (A), description (B),
-- tags (C), publisher and base model (D).
CREATE TABLE adapters (
  rowid               BIGSERIAL UNIQUE,
  id                  TEXT COLLATE "C" NOT NULL UNIQUE,
  name                TEXT COLLATE "C" NOT NULL,
  description         TEXT NOT NULL DEFAULT '',
  publisher_id        TEXT NOT NULL REFERENCES publishers (id),
  base_model          TEXT NOT NULL,
  base_model_sha256   TEXT NOT NULL DEFAULT '',
  license             TEXT NOT NULL DEFAULT '',
  price_per_1k_tokens DOUBLE PRECISION NOT NULL DEFAULT 0,
  format              TEXT NOT NULL,
  rank                BIGINT NOT NULL,
  alpha               DOUBLE PRECISION NOT NULL,
  tags                TEXT NOT NULL DEFAULT '[]',
  latest_version      TEXT NOT NULL,
  created_at          BIGINT NOT NULL,
  updated_at          BIGINT NOT NULL,
  search_vector       TSVECTOR NOT NULL DEFAULT ''
);
CREATE INDEX adapters_by_base_model ON adapters (base_model);
CREATE INDEX adapters_search ON adapters USING GIN (search_vector);

CREATE TABLE adapter_target_modules (
  adapter_id TEXT COLLATE "C" NOT NULL REFERENCES adapters (id) ON DELETE CASCADE,
  module     TEXT NOT NULL,
  PRIMARY KEY (adapter_id, module)
);
CREATE INDEX adapter_target_modules_by_module ON adapter_target_modules (module);

CREATE TABLE versions (
  adapter_id     TEXT COLLATE "C" NOT NULL REFERENCES adapters (id) ON DELETE CASCADE,
  version        TEXT COLLATE "C" NOT NULL,
  rank           BIGINT NOT NULL,
  alpha          DOUBLE PRECISION NOT NULL,
  target_modules TEXT NOT NULL,
  manifest       TEXT NOT NULL,
  signature      TEXT NOT NULL,
  key_id         TEXT NOT NULL REFERENCES publisher_keys (key_id),
  created_at     BIGINT NOT NULL,
  PRIMARY KEY (adapter_id, version)
);

CREATE TABLE files (
  adapter_id TEXT COLLATE "C" NOT NULL,
  version    TEXT COLLATE "C" NOT NULL,
  name       TEXT COLLATE "C" NOT NULL,
  sha256     TEXT NOT NULL,
  size       BIGINT NOT NULL,
  PRIMARY KEY (adapter_id, version, name),
  FOREIGN KEY (adapter_id, version) REFERENCES versions (adapter_id, version) ON DELETE CASCADE
);
