-- 0004-routing.sql (SQLite): each adapter's routing hints, as the publisher's
-- metadata.json gives them: "keywords" (matched as whole words) and
-- "examples" (prompts the adapter suits), JSON lists of strings like tags.
-- The chat routes installed adapters by them (src/chat/ts-router.c).
-- SPDX-License-Identifier: GPL-3.0-or-later

ALTER TABLE adapters ADD COLUMN keywords TEXT NOT NULL DEFAULT '[]';
ALTER TABLE adapters ADD COLUMN examples TEXT NOT NULL DEFAULT '[]';
