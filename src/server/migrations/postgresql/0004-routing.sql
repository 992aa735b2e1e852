-- 0004-routing.sql (PostgreSQL): each adapter's routing hints, as the
-- publisher's metadata.json gives them: "keywords" (matched as whole words)
-- and "examples" (prompts the adapter suits), JSON lists of strings like
-- tags; the same columns as the SQLite migration of the same number.
-- SPDX-License-Identifier: GPL-3.0-or-later

ALTER TABLE adapters
  ADD COLUMN keywords TEXT NOT NULL DEFAULT '[]',
  ADD COLUMN examples TEXT NOT NULL DEFAULT '[]';
