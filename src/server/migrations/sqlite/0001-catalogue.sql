-- 0001-catalogue.sql (SQLite): publishers, their keys, adapters, versions, files and the search index.
-- SPDX-License-Identifier: GPL-3.0-or-later

CREATE TABLE publishers (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE publisher_keys (
  key_id       TEXT PRIMARY KEY,
  publisher_id TEXT NOT NULL REFERENCES publishers (id),
  algorithm    TEXT NOT NULL DEFAULT 'ed25519',
  public_key   TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  revoked      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX publisher_keys_by_publisher ON publisher_keys (publisher_id);

-- One row per adapter; the searchable attributes are those of the latest version.
CREATE TABLE adapters (
  rowid               INTEGER PRIMARY KEY,
  id                  TEXT NOT NULL UNIQUE,
  name                TEXT NOT NULL,
  description         TEXT NOT NULL DEFAULT '',
  publisher_id        TEXT NOT NULL REFERENCES publishers (id),
  base_model          TEXT NOT NULL,
  base_model_sha256   TEXT NOT NULL DEFAULT '',
  license             TEXT NOT NULL DEFAULT '',
  price_per_1k_tokens REAL NOT NULL DEFAULT 0,
  format              TEXT NOT NULL,
  rank                INTEGER NOT NULL,
  alpha               REAL NOT NULL,
  tags                TEXT NOT NULL DEFAULT '[]',
  latest_version      TEXT NOT NULL,
  created_at          INTEGER NOT NULL,
  updated_at          INTEGER NOT NULL
);
CREATE INDEX adapters_by_base_model ON adapters (base_model);

CREATE TABLE adapter_target_modules (
  adapter_id TEXT NOT NULL REFERENCES adapters (id) ON DELETE CASCADE,
  module     TEXT NOT NULL,
  PRIMARY KEY (adapter_id, module)
);
CREATE INDEX adapter_target_modules_by_module ON adapter_target_modules (module);

CREATE TABLE versions (
  adapter_id     TEXT NOT NULL REFERENCES adapters (id) ON DELETE CASCADE,
  version        TEXT NOT NULL,
  rank           INTEGER NOT NULL,
  alpha          REAL NOT NULL,
  target_modules TEXT NOT NULL,
  manifest       TEXT NOT NULL,
  signature      TEXT NOT NULL,
  key_id         TEXT NOT NULL REFERENCES publisher_keys (key_id),
  created_at     INTEGER NOT NULL,
  PRIMARY KEY (adapter_id, version)
);

CREATE TABLE files (
  adapter_id TEXT NOT NULL,
  version    TEXT NOT NULL,
  name       TEXT NOT NULL,
  sha256     TEXT NOT NULL,
  size       INTEGER NOT NULL,
  PRIMARY KEY (adapter_id, version, name),
  FOREIGN KEY (adapter_id, version) REFERENCES versions (adapter_id, version) ON DELETE CASCADE
);

-- Full-text index over the adapter rows; rowid matches adapters.rowid.
CREATE VIRTUAL TABLE adapters_fts USING fts5 (
  name, description, tags, publisher, base_model,
  tokenize = 'unicode61 remove_diacritics 2'
);
