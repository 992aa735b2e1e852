-- 0003-unaccent.sql (SQLite): nothing to do. FTS5's unicode61 tokenizer
-- already folds diacritics; PostgreSQL's 0003 makes its search do the same,
-- and both dialects keep the same numbers.
-- SPDX-License-Identifier: GPL-3.0-or-later

SELECT 1;
