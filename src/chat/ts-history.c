/* ts-history.c: conversations kept in SQLite (XDG data dir tensafe/history.sqlite).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <errno.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>

#include "ts-history.h"

G_DEFINE_QUARK (ts-history-error-quark, ts_history_error)

struct _TsHistory
{
  sqlite3 *db;
};

static const char schema_sql[] =
  "PRAGMA journal_mode=WAL;"
  "PRAGMA synchronous=NORMAL;"
  "PRAGMA foreign_keys=ON;"
  "CREATE TABLE IF NOT EXISTS conversations ("
  "  id INTEGER PRIMARY KEY,"
  "  title TEXT NOT NULL,"
  "  created INTEGER NOT NULL,"
  "  updated INTEGER NOT NULL);"
  "CREATE TABLE IF NOT EXISTS messages ("
  "  id INTEGER PRIMARY KEY,"
  "  conversation INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
  "  is_user INTEGER NOT NULL,"
  "  pane INTEGER NOT NULL,"
  "  content TEXT NOT NULL,"
  "  complete INTEGER NOT NULL,"
  "  note TEXT);"
  "CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages(conversation, id);";


static gboolean
db_error (TsHistory *self, GError **error)
{
  g_set_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_DATABASE, "History database: %s",
               sqlite3_errmsg (self->db));
  return FALSE;
}

void
ts_history_conversation_free (TsHistoryConversation *c)
{
  if (c == NULL)
    return;
  g_free (c->title);
  g_free (c);
}

void
ts_history_message_free (TsHistoryMessage *m)
{
  if (m == NULL)
    return;
  g_free (m->content);
  g_free (m->note);
  g_free (m->thinking);
  ts_history_reply_stats_free (m->stats);
  g_free (m);
}

char *
ts_history_default_path (void)
{
  return g_build_filename (g_get_user_data_dir (), "tensafe", "history.sqlite", NULL);
}

static gboolean
has_column (TsHistory *self, const char *table, const char *name)
{
  g_autofree char *sql = g_strdup_printf ("PRAGMA table_info(%s)", table);
  sqlite3_stmt *stmt = NULL;
  gboolean found = FALSE;

  if (sqlite3_prepare_v2 (self->db, sql, -1, &stmt, NULL) != SQLITE_OK)
    return FALSE;
  while (!found && sqlite3_step (stmt) == SQLITE_ROW)
    found = g_strcmp0 ((const char *) sqlite3_column_text (stmt, 1), name) == 0;
  sqlite3_finalize (stmt);
  return found;
}

/* Adds @column to @table unless it is there (a database that schema_sql
 * made with it); existing rows get its default. */
static gboolean
add_table_column (TsHistory *self, const char *table, const char *column, const char *definition)
{
  g_autofree char *sql = g_strdup_printf ("ALTER TABLE %s ADD COLUMN %s %s;", table, column,
                                          definition);

  return has_column (self, table, column)
         || sqlite3_exec (self->db, sql, NULL, NULL, NULL) == SQLITE_OK;
}

static gboolean
add_column (TsHistory *self, const char *column, const char *definition)
{
  return add_table_column (self, "messages", column, definition);
}

/* Version 1: the note above a reply. */
static gboolean
migrate_to_1 (TsHistory *self)
{
  return add_column (self, "note", "TEXT");
}

/* Version 2: a finished reply's footer numbers and chart bars (JSON). */
static gboolean
migrate_to_2 (TsHistory *self)
{
  return add_column (self, "stats", "TEXT");
}

/* Version 3: exchanges left out of the conversation the model sees. */
static gboolean
migrate_to_3 (TsHistory *self)
{
  return add_column (self, "left_out", "INTEGER NOT NULL DEFAULT 0");
}

/* Version 4: a reply's thinking (models that think before they answer). */
static gboolean
migrate_to_4 (TsHistory *self)
{
  return add_column (self, "thinking", "TEXT");
}

/* Version 5: a conversation's system prompt and sampling settings (JSON;
 * NULL: the preferences' defaults, as every older conversation has). */
static gboolean
migrate_to_5 (TsHistory *self)
{
  return add_table_column (self, "conversations", "settings", "TEXT");
}

/* migrations[i] brings a database from user_version i to i + 1; no row is
 * touched, so files of every older version open and keep their messages. */
static gboolean (*const migrations[]) (TsHistory *self) = {
  migrate_to_1,
  migrate_to_2,
  migrate_to_3,
  migrate_to_4,
  migrate_to_5,
};
#define SCHEMA_VERSION ((int) G_N_ELEMENTS (migrations))

/* Brings an older database up to SCHEMA_VERSION in one transaction. */
static gboolean
migrate (TsHistory *self, GError **error)
{
  sqlite3_stmt *stmt = NULL;
  int version = 0;
  gboolean ok = TRUE;
  g_autofree char *set_version = g_strdup_printf ("PRAGMA user_version=%d;", SCHEMA_VERSION);

  if (sqlite3_prepare_v2 (self->db, "PRAGMA user_version", -1, &stmt, NULL) != SQLITE_OK)
    return FALSE;
  if (sqlite3_step (stmt) == SQLITE_ROW)
    version = sqlite3_column_int (stmt, 0);
  sqlite3_finalize (stmt);
  if (version >= SCHEMA_VERSION)
    return TRUE;
  if (sqlite3_exec (self->db, "BEGIN IMMEDIATE;", NULL, NULL, NULL) != SQLITE_OK)
    return FALSE;
  for (int v = MAX (version, 0); ok && v < SCHEMA_VERSION; v++)
    ok = migrations[v] (self);
  if (ok && sqlite3_exec (self->db, set_version, NULL, NULL, NULL) == SQLITE_OK
      && sqlite3_exec (self->db, "COMMIT;", NULL, NULL, NULL) == SQLITE_OK)
    return TRUE;
  sqlite3_exec (self->db, "ROLLBACK;", NULL, NULL, NULL);
  return FALSE;
}

/* @text without case or accents: the compatibility decomposition, case
 * folded, less its combining marks ("Résumé" and "RESUME" both give
 * "resume"). */
static char *
fold_text (const char *text)
{
  g_autofree char *valid = g_utf8_make_valid (text, -1);
  g_autofree char *decomposed = g_utf8_normalize (valid, -1, G_NORMALIZE_ALL);
  g_autofree char *folded = g_utf8_casefold (decomposed, -1);
  GString *out = g_string_sized_new (strlen (folded));

  for (const char *p = folded; *p != '\0'; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);

      if (g_unichar_type (c) != G_UNICODE_NON_SPACING_MARK)
        g_string_append_unichar (out, c);
    }
  return g_string_free (out, FALSE);
}

/* ts_fold(text) in SQL: SQLite's own LIKE and lower() fold ASCII only. */
static void
fold_sql (sqlite3_context *context, int argc, sqlite3_value **argv)
{
  const char *text = (const char *) sqlite3_value_text (argv[0]);

  if (text == NULL)
    sqlite3_result_null (context);
  else
    sqlite3_result_text (context, fold_text (text), -1, g_free);
}

static gboolean
add_fold_function (TsHistory *self)
{
  return sqlite3_create_function_v2 (self->db, "ts_fold", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                     NULL, fold_sql, NULL, NULL, NULL) == SQLITE_OK;
}

TsHistory *
ts_history_open (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autoptr (TsHistory) self = g_new0 (TsHistory, 1);
  g_autofree char *dir = g_path_get_dirname (path);

  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved = errno;
      g_set_error (error, G_IO_ERROR, g_io_error_from_errno (saved), "Cannot create %s: %s",
                   dir, g_strerror (saved));
      return NULL;
    }
  if (sqlite3_open_v2 (path, &self->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK ||
      sqlite3_exec (self->db, schema_sql, NULL, NULL, NULL) != SQLITE_OK ||
      !migrate (self, error) || !add_fold_function (self))
    return db_error (self, error), NULL;
  sqlite3_busy_timeout (self->db, 2000);
  return g_steal_pointer (&self);
}

void
ts_history_close (TsHistory *self)
{
  if (self == NULL)
    return;
  sqlite3_close (self->db);
  g_free (self);
}

static sqlite3_stmt *
prepare (TsHistory *self, const char *sql, GError **error)
{
  sqlite3_stmt *stmt = NULL;

  if (sqlite3_prepare_v2 (self->db, sql, -1, &stmt, NULL) != SQLITE_OK)
    db_error (self, error);
  return stmt;
}

/* Steps @stmt to completion and finalizes it; checks one row changed when
 * @must_change. */
static gboolean
run (TsHistory *self, sqlite3_stmt *stmt, gboolean must_change, GError **error)
{
  int rc = sqlite3_step (stmt);

  sqlite3_finalize (stmt);
  if (rc != SQLITE_DONE)
    return db_error (self, error);
  if (must_change && sqlite3_changes (self->db) == 0)
    {
      g_set_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_NOT_FOUND,
                   "No such conversation or message");
      return FALSE;
    }
  return TRUE;
}

/* Every row of @stmt (id, title, created, updated) as a TsHistoryConversation;
 * finalizes @stmt. */
static GPtrArray *
read_conversations (TsHistory *self, sqlite3_stmt *stmt, GError **error)
{
  GPtrArray *list = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_history_conversation_free);
  int rc;

  while ((rc = sqlite3_step (stmt)) == SQLITE_ROW)
    {
      TsHistoryConversation *c = g_new0 (TsHistoryConversation, 1);

      c->id = sqlite3_column_int64 (stmt, 0);
      c->title = g_strdup ((const char *) sqlite3_column_text (stmt, 1));
      c->created = sqlite3_column_int64 (stmt, 2);
      c->updated = sqlite3_column_int64 (stmt, 3);
      g_ptr_array_add (list, c);
    }
  sqlite3_finalize (stmt);
  if (rc != SQLITE_DONE)
    {
      g_ptr_array_unref (list);
      return db_error (self, error), NULL;
    }
  return list;
}

GPtrArray *
ts_history_list (TsHistory *self, GError **error)
{
  g_return_val_if_fail (self != NULL, NULL);

  sqlite3_stmt *stmt = prepare (self, "SELECT id, title, created, updated FROM conversations"
                                      " ORDER BY updated DESC, id DESC", error);

  return stmt != NULL ? read_conversations (self, stmt, error) : NULL;
}

/* instr() rather than LIKE: the folded query is looked for as it is, so
 * % and _ need no escaping. */
GPtrArray *
ts_history_search (TsHistory *self, const char *query, GError **error)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_autofree char *trimmed = g_strstrip (g_strdup (query != NULL ? query : ""));
  g_autofree char *folded = NULL;
  sqlite3_stmt *stmt;

  if (*trimmed == '\0')
    return ts_history_list (self, error);
  folded = fold_text (trimmed);
  stmt = prepare (self, "SELECT c.id, c.title, c.created, c.updated FROM conversations c"
                        " WHERE instr(ts_fold(c.title), ?1) > 0"
                        "  OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation = c.id"
                        "             AND instr(ts_fold(m.content), ?1) > 0)"
                        " ORDER BY c.updated DESC, c.id DESC", error);
  if (stmt == NULL)
    return NULL;
  sqlite3_bind_text (stmt, 1, folded, -1, SQLITE_TRANSIENT);
  return read_conversations (self, stmt, error);
}

gint64
ts_history_create (TsHistory *self, const char *title, GError **error)
{
  g_return_val_if_fail (self != NULL, 0);

  sqlite3_stmt *stmt = prepare (self, "INSERT INTO conversations (title, created, updated)"
                                      " VALUES (?1, ?2, ?2)", error);
  gint64 now = g_get_real_time () / G_USEC_PER_SEC;

  if (stmt == NULL)
    return 0;
  sqlite3_bind_text (stmt, 1, title, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64 (stmt, 2, now);
  if (!run (self, stmt, FALSE, error))
    return 0;
  return sqlite3_last_insert_rowid (self->db);
}

gboolean
ts_history_rename (TsHistory *self, gint64 conversation, const char *title, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (title != NULL, FALSE);

  sqlite3_stmt *stmt = prepare (self, "UPDATE conversations SET title = ?1 WHERE id = ?2", error);

  if (stmt == NULL)
    return FALSE;
  sqlite3_bind_text (stmt, 1, title, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64 (stmt, 2, conversation);
  return run (self, stmt, TRUE, error);
}

gboolean
ts_history_delete (TsHistory *self, gint64 conversation, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  sqlite3_stmt *stmt = prepare (self, "DELETE FROM conversations WHERE id = ?1", error);

  if (stmt == NULL)
    return FALSE;
  sqlite3_bind_int64 (stmt, 1, conversation);
  return run (self, stmt, TRUE, error);
}

/* A damaged statistics text loses the chart, not the conversation. */
static TsHistoryReplyStats *
read_stats (sqlite3_stmt *stmt, int column, gint64 message)
{
  const char *json = (const char *) sqlite3_column_text (stmt, column);
  g_autoptr (GError) error = NULL;
  TsHistoryReplyStats *stats;

  if (json == NULL)
    return NULL;
  if ((stats = ts_history_reply_stats_from_json (json, &error)) == NULL)
    g_warning ("History message %" G_GINT64_FORMAT ": %s", message, error->message);
  return stats;
}

GPtrArray *
ts_history_messages (TsHistory *self, gint64 conversation, GError **error)
{
  g_return_val_if_fail (self != NULL, NULL);

  sqlite3_stmt *stmt = prepare (self, "SELECT id, is_user, pane, content, complete, note, stats,"
                                      " left_out, thinking FROM messages"
                                      " WHERE conversation = ?1 ORDER BY id", error);
  GPtrArray *list;
  int rc;

  if (stmt == NULL)
    return NULL;
  sqlite3_bind_int64 (stmt, 1, conversation);
  list = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_history_message_free);
  while ((rc = sqlite3_step (stmt)) == SQLITE_ROW)
    {
      TsHistoryMessage *m = g_new0 (TsHistoryMessage, 1);
      int pane = sqlite3_column_int (stmt, 2);

      m->id = sqlite3_column_int64 (stmt, 0);
      m->is_user = sqlite3_column_int (stmt, 1) != 0;
      m->pane = pane >= TS_HISTORY_PANE_BOTH && pane <= TS_HISTORY_PANE_HE ? pane : TS_HISTORY_PANE_BOTH;
      m->content = g_strdup ((const char *) sqlite3_column_text (stmt, 3));
      m->complete = sqlite3_column_int (stmt, 4) != 0;
      m->note = g_strdup ((const char *) sqlite3_column_text (stmt, 5));
      m->stats = read_stats (stmt, 6, m->id);
      m->left_out = sqlite3_column_int (stmt, 7) != 0;
      m->thinking = g_strdup ((const char *) sqlite3_column_text (stmt, 8));
      g_ptr_array_add (list, m);
    }
  sqlite3_finalize (stmt);
  if (rc != SQLITE_DONE)
    {
      g_ptr_array_unref (list);
      return db_error (self, error), NULL;
    }
  return list;
}

static void
touch (TsHistory *self, gint64 conversation)
{
  sqlite3_stmt *stmt = prepare (self, "UPDATE conversations SET updated = ?1 WHERE id = ?2", NULL);

  if (stmt == NULL)
    return;
  sqlite3_bind_int64 (stmt, 1, g_get_real_time () / G_USEC_PER_SEC);
  sqlite3_bind_int64 (stmt, 2, conversation);
  run (self, stmt, FALSE, NULL);
}

gint64
ts_history_add_message (TsHistory *self, gint64 conversation, gboolean is_user,
                        TsHistoryPane pane, const char *content, gboolean complete,
                        GError **error)
{
  g_return_val_if_fail (self != NULL, 0);

  sqlite3_stmt *stmt = prepare (self, "INSERT INTO messages (conversation, is_user, pane, content,"
                                      " complete) VALUES (?1, ?2, ?3, ?4, ?5)", error);

  if (stmt == NULL)
    return 0;
  sqlite3_bind_int64 (stmt, 1, conversation);
  sqlite3_bind_int (stmt, 2, is_user ? 1 : 0);
  sqlite3_bind_int (stmt, 3, pane);
  sqlite3_bind_text (stmt, 4, content != NULL ? content : "", -1, SQLITE_TRANSIENT);
  sqlite3_bind_int (stmt, 5, complete ? 1 : 0);
  if (!run (self, stmt, FALSE, error))
    return 0;
  touch (self, conversation);
  return sqlite3_last_insert_rowid (self->db);
}

gboolean
ts_history_update_message (TsHistory *self, gint64 message, const char *content,
                           gboolean complete, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  sqlite3_stmt *stmt = prepare (self, "UPDATE messages SET content = ?1, complete = ?2"
                                      " WHERE id = ?3", error);

  if (stmt == NULL)
    return FALSE;
  sqlite3_bind_text (stmt, 1, content != NULL ? content : "", -1, SQLITE_TRANSIENT);
  sqlite3_bind_int (stmt, 2, complete ? 1 : 0);
  sqlite3_bind_int64 (stmt, 3, message);
  return run (self, stmt, TRUE, error);
}

gboolean
ts_history_set_note (TsHistory *self, gint64 message, const char *note, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  sqlite3_stmt *stmt = prepare (self, "UPDATE messages SET note = ?1 WHERE id = ?2", error);

  if (stmt == NULL)
    return FALSE;
  if (note != NULL)
    sqlite3_bind_text (stmt, 1, note, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null (stmt, 1);
  sqlite3_bind_int64 (stmt, 2, message);
  return run (self, stmt, TRUE, error);
}

gboolean
ts_history_set_thinking (TsHistory *self, gint64 message, const char *thinking, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  sqlite3_stmt *stmt = prepare (self, "UPDATE messages SET thinking = ?1 WHERE id = ?2", error);

  if (stmt == NULL)
    return FALSE;
  if (thinking != NULL && *thinking != '\0')
    sqlite3_bind_text (stmt, 1, thinking, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null (stmt, 1);
  sqlite3_bind_int64 (stmt, 2, message);
  return run (self, stmt, TRUE, error);
}

gboolean
ts_history_set_stats (TsHistory *self, gint64 message, const TsHistoryReplyStats *stats,
                      GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  sqlite3_stmt *stmt = prepare (self, "UPDATE messages SET stats = ?1 WHERE id = ?2", error);
  g_autofree char *json = stats != NULL ? ts_history_reply_stats_to_json (stats) : NULL;

  if (stmt == NULL)
    return FALSE;
  if (json != NULL)
    sqlite3_bind_text (stmt, 1, json, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null (stmt, 1);
  sqlite3_bind_int64 (stmt, 2, message);
  return run (self, stmt, TRUE, error);
}

gboolean
ts_history_leave_out (TsHistory *self, gint64 conversation, gint64 message, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  sqlite3_stmt *stmt = prepare (self, "UPDATE messages SET left_out = 1"
                                      " WHERE conversation = ?1 AND id >= ?2", error);

  if (stmt == NULL)
    return FALSE;
  sqlite3_bind_int64 (stmt, 1, conversation);
  sqlite3_bind_int64 (stmt, 2, message);
  return run (self, stmt, TRUE, error);
}

gboolean
ts_history_truncate (TsHistory *self, gint64 conversation, gint64 message, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  sqlite3_stmt *stmt = prepare (self, "DELETE FROM messages WHERE conversation = ?1 AND id >= ?2",
                                error);

  if (stmt == NULL)
    return FALSE;
  sqlite3_bind_int64 (stmt, 1, conversation);
  sqlite3_bind_int64 (stmt, 2, message);
  return run (self, stmt, FALSE, error);
}

gboolean
ts_history_get_settings (TsHistory *self, gint64 conversation, TsConversationSettings **out,
                         GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  sqlite3_stmt *stmt = prepare (self, "SELECT settings FROM conversations WHERE id = ?1", error);
  g_autoptr (GError) parse_error = NULL;
  const char *json;
  int rc;

  *out = NULL;
  if (stmt == NULL)
    return FALSE;
  sqlite3_bind_int64 (stmt, 1, conversation);
  if ((rc = sqlite3_step (stmt)) != SQLITE_ROW)
    {
      sqlite3_finalize (stmt);
      if (rc != SQLITE_DONE)
        return db_error (self, error);
      g_set_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_NOT_FOUND,
                   "No conversation with id %" G_GINT64_FORMAT " in the history", conversation);
      return FALSE;
    }
  /* Damaged settings fall back to the defaults: the conversation still opens. */
  if ((json = (const char *) sqlite3_column_text (stmt, 0)) != NULL
      && (*out = ts_conversation_settings_from_json (json, &parse_error)) == NULL)
    g_warning ("History conversation %" G_GINT64_FORMAT ": %s", conversation, parse_error->message);
  sqlite3_finalize (stmt);
  return TRUE;
}

gboolean
ts_history_set_settings (TsHistory *self, gint64 conversation,
                         const TsConversationSettings *settings, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  sqlite3_stmt *stmt;
  g_autofree char *json = NULL;

  if (settings != NULL && !ts_conversation_settings_validate (settings, 0, error))
    return FALSE;
  if ((stmt = prepare (self, "UPDATE conversations SET settings = ?1 WHERE id = ?2", error)) == NULL)
    return FALSE;
  if (settings != NULL)
    {
      json = ts_conversation_settings_to_json (settings);
      sqlite3_bind_text (stmt, 1, json, -1, SQLITE_TRANSIENT);
    }
  else
    sqlite3_bind_null (stmt, 1);
  sqlite3_bind_int64 (stmt, 2, conversation);
  return run (self, stmt, TRUE, error);
}
