-- 0003-unaccent.sql (PostgreSQL): search folds diacritics, as SQLite's FTS5
-- (unicode61, remove_diacritics) does: "cafe" finds "Café" and the other way
-- round. unaccent is a trusted extension (a database owner may create it);
-- documents and queries both go through it (marketd-import.c,
-- marketd-migrate.c, marketd-search.c), and the existing documents are
-- rebuilt here.
-- SPDX-License-Identifier: GPL-3.0-or-later

CREATE EXTENSION IF NOT EXISTS unaccent;

UPDATE adapters a SET search_vector =
  setweight(to_tsvector('simple', unaccent(a.name)), 'A') ||
  setweight(to_tsvector('simple', unaccent(a.description)), 'B') ||
  setweight(to_tsvector('simple', unaccent(a.tags)), 'C') ||
  setweight(to_tsvector('simple', unaccent(p.name || ' ' || a.base_model)), 'D')
FROM publishers p WHERE p.id = a.publisher_id;
