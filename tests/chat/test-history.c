/* test-history.c: history.sqlite: files written by older versions open and
 * keep their messages; a reply's footer numbers and chart bars, and its
 * thinking, come back as they were stored; a turn left out stays left out;
 * a conversation's settings come back as stored (old files: none, the
 * defaults); truncating removes exactly the later messages, with their
 * statistics.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <sqlite3.h>
#include <string.h>

#include "ts-history.h"
#include "ts-test-util.h"

/* The tables as version 0 (no note) and version 1 (user_version 1) wrote
 * them, with one conversation of a prompt and a reply. */
static const char v0_sql[] =
  "CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT NOT NULL,"
  "  created INTEGER NOT NULL, updated INTEGER NOT NULL);"
  "CREATE TABLE messages (id INTEGER PRIMARY KEY,"
  "  conversation INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,"
  "  is_user INTEGER NOT NULL, pane INTEGER NOT NULL, content TEXT NOT NULL,"
  "  complete INTEGER NOT NULL);"
  "INSERT INTO conversations VALUES (1, 'Old', 100, 100);"
  "INSERT INTO messages VALUES (1, 1, 1, 0, 'Hi', 1);"
  "INSERT INTO messages VALUES (2, 1, 0, 1, 'Hello there', 1);";
static const char v1_sql[] =
  "ALTER TABLE messages ADD COLUMN note TEXT;"
  "UPDATE messages SET note = 'routed' WHERE id = 2;"
  "PRAGMA user_version=1;";

static char *
write_old_file (const char *dir, gboolean with_note)
{
  char *path = g_build_filename (dir, with_note ? "v1.sqlite" : "v0.sqlite", NULL);
  sqlite3 *db = NULL;

  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, v0_sql, NULL, NULL, NULL), ==, SQLITE_OK);
  if (with_note)
    g_assert_cmpint (sqlite3_exec (db, v1_sql, NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);
  return path;
}

/* An old conversation has no settings of its own (it follows the
 * preferences' defaults) until some are kept with it. */
static void
check_old_settings (TsHistory *history)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsConversationSettings) settings = NULL;
  g_autoptr (TsConversationSettings) mine = ts_conversation_settings_new ();

  g_assert_true (ts_history_get_settings (history, 1, &settings, &error));
  g_assert_no_error (error);
  g_assert_null (settings);
  mine->temperature = 0.5;
  g_assert_true (ts_history_set_settings (history, 1, mine, &error));
  g_assert_no_error (error);
  g_assert_true (ts_history_get_settings (history, 1, &settings, &error));
  g_assert_nonnull (settings);
  g_assert_cmpfloat (settings->temperature, ==, 0.5);
}

static void
check_old_file (const char *dir, gboolean with_note)
{
  g_autofree char *path = write_old_file (dir, with_note);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistory) history = ts_history_open (path, &error);
  g_autoptr (GPtrArray) messages = NULL;
  g_autoptr (TsHistoryReplyStats) stats = ts_history_reply_stats_new ();
  TsHistoryMessage *reply;

  g_assert_no_error (error);
  messages = ts_history_messages (history, 1, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (messages->len, ==, 2);
  reply = g_ptr_array_index (messages, 1);
  g_assert_cmpstr (reply->content, ==, "Hello there");
  g_assert_cmpstr (reply->note, ==, with_note ? "routed" : NULL);
  g_assert_null (reply->stats);
  g_assert_false (reply->left_out);
  g_assert_null (reply->thinking);
  /* The migrated file takes the new columns. */
  stats->n_tokens = 3;
  g_assert_true (ts_history_set_stats (history, 2, stats, &error));
  g_assert_no_error (error);
  g_assert_true (ts_history_leave_out (history, 1, 2, &error));
  g_assert_no_error (error);
  g_ptr_array_unref (messages);
  messages = ts_history_messages (history, 1, &error);
  g_assert_no_error (error);
  g_assert_false (((TsHistoryMessage *) g_ptr_array_index (messages, 0))->left_out);
  g_assert_true (((TsHistoryMessage *) g_ptr_array_index (messages, 1))->left_out);
  g_assert_cmpuint (((TsHistoryMessage *) g_ptr_array_index (messages, 1))->stats->n_tokens, ==, 3);
  check_old_settings (history);
}

/* The tables as version 3 wrote them (note, stats, left_out; no thinking). */
static const char v3_sql[] =
  "ALTER TABLE messages ADD COLUMN stats TEXT;"
  "ALTER TABLE messages ADD COLUMN left_out INTEGER NOT NULL DEFAULT 0;"
  "PRAGMA user_version=3;";

static int
user_version (const char *path)
{
  sqlite3 *db = NULL;
  sqlite3_stmt *stmt = NULL;
  int version;

  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "PRAGMA user_version", -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_step (stmt), ==, SQLITE_ROW);
  version = sqlite3_column_int (stmt, 0);
  sqlite3_finalize (stmt);
  sqlite3_close (db);
  return version;
}

/* The stored reply's thinking (newly allocated), read from a fresh open. */
static char *
reply_thinking (const char *path)
{  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistory) history = ts_history_open (path, &error);
  g_autoptr (GPtrArray) messages = NULL;

  g_assert_no_error (error);
  messages = ts_history_messages (history, 1, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (messages->len, ==, 2);
  g_assert_cmpstr (((TsHistoryMessage *) g_ptr_array_index (messages, 1))->content, ==,
                   "Hello there");
  return g_strdup (((TsHistoryMessage *) g_ptr_array_index (messages, 1))->thinking);
}

/* A version 3 file opens with its messages and no thinking, then keeps a
 * reply's thinking (lines, quotes, non-ASCII) across closing and opening;
 * "" clears it. */
static void
test_thinking_round_trip (void)
{
  static const char thinking[] = "The user greets me.\n\n\"Hello\" it is — short, «friendly».\n";
  g_autofree char *dir = g_dir_make_tmp ("tensafe-history-XXXXXX", NULL);
  g_autofree char *path = write_old_file (dir, TRUE);
  g_autofree char *before = NULL, *kept = NULL, *cleared = NULL;
  g_autoptr (GError) error = NULL;
  sqlite3 *db = NULL;

  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, v3_sql, NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);
  before = reply_thinking (path);
  g_assert_null (before);
  g_assert_cmpint (user_version (path), ==, 5);
  {
    g_autoptr (TsHistory) history = ts_history_open (path, &error);

    g_assert_no_error (error);
    g_assert_true (ts_history_set_thinking (history, 2, thinking, &error));
    g_assert_no_error (error);
  }
  kept = reply_thinking (path);
  g_assert_cmpstr (kept, ==, thinking);
  {
    g_autoptr (TsHistory) history = ts_history_open (path, &error);

    g_assert_true (ts_history_set_thinking (history, 2, "", &error));
    g_assert_no_error (error);
  }
  cleared = reply_thinking (path);
  g_assert_null (cleared);
  ts_test_remove_tree (dir);
}

/* A version 4 file (thinking, no settings) opens at version 5: its
 * conversation follows the defaults until settings are kept with it. */
static void
test_version_4_file_opens (void)
{
  g_autofree char *dir = g_dir_make_tmp ("tensafe-history-XXXXXX", NULL);
  g_autofree char *path = write_old_file (dir, TRUE);
  g_autoptr (GError) error = NULL;
  sqlite3 *db = NULL;

  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, v3_sql, NULL, NULL, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, "ALTER TABLE messages ADD COLUMN thinking TEXT;"
                                     "UPDATE messages SET thinking = 'hm' WHERE id = 2;"
                                     "PRAGMA user_version=4;", NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);
  {
    g_autoptr (TsHistory) history = ts_history_open (path, &error);

    g_assert_no_error (error);
    check_old_settings (history);
  }
  g_assert_cmpint (user_version (path), ==, 5);
  {
    g_autofree char *thinking = reply_thinking (path);

    g_assert_cmpstr (thinking, ==, "hm");
  }
  ts_test_remove_tree (dir);
}

static void
test_old_files_open (void)
{
  g_autofree char *dir = g_dir_make_tmp ("tensafe-history-XXXXXX", NULL);

  check_old_file (dir, FALSE);
  check_old_file (dir, TRUE);
  ts_test_remove_tree (dir);
}

static void
test_stats_round_trip (void)
{
  g_autofree char *dir = g_dir_make_tmp ("tensafe-history-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "history.sqlite", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistory) history = ts_history_open (path, &error);
  g_autoptr (TsHistoryReplyStats) stats = ts_history_reply_stats_new ();
  g_autoptr (GPtrArray) messages = NULL;
  TsTokenTimings bar = { .ms = { [TS_STAGE_FORWARD] = 1.25, [TS_STAGE_EVALUATE] = 7.5,
                                 [TS_STAGE_SAMPLE] = 0.125 },
                         .bytes_up = 131072, .bytes_down = 65536 };
  const TsHistoryReplyStats *back;
  gint64 conversation, reply;

  g_assert_no_error (error);
  conversation = ts_history_create (history, "Numbers", &error);
  reply = ts_history_add_message (history, conversation, FALSE, TS_HISTORY_PANE_HE, "Hi", TRUE,
                                  &error);
  g_assert_no_error (error);
  stats->n_tokens = 2;
  stats->tokens_per_second = 12.5;
  stats->first_token_ms = 80;
  stats->max_delta_error = 3e-6;
  stats->bytes_per_token = 196608;
  stats->encrypted = TRUE;
  stats->he_modules = 15;
  stats->he_inputs = 9;
  stats->diverged_at = 1;
  ts_history_reply_stats_add_bar (stats, &bar, "Hi");
  bar.ms[TS_STAGE_FORWARD] = 2.5;
  ts_history_reply_stats_add_bar (stats, &bar, "⏎");
  g_assert_true (ts_history_set_stats (history, reply, stats, &error));
  g_assert_no_error (error);

  messages = ts_history_messages (history, conversation, &error);
  g_assert_no_error (error);
  back = ((TsHistoryMessage *) g_ptr_array_index (messages, 0))->stats;
  g_assert_nonnull (back);
  g_assert_cmpuint (back->n_tokens, ==, 2);
  g_assert_cmpfloat (back->tokens_per_second, ==, 12.5);
  g_assert_cmpfloat (back->first_token_ms, ==, 80);
  g_assert_cmpfloat_with_epsilon (back->max_delta_error, 3e-6, 1e-12);
  g_assert_cmpfloat (back->bytes_per_token, ==, 196608);
  g_assert_true (back->encrypted);
  g_assert_true (back->has_adapter);
  g_assert_cmpuint (back->he_modules, ==, 15);
  g_assert_cmpuint (back->he_inputs, ==, 9);
  g_assert_cmpint (back->diverged_at, ==, 1);
  g_assert_cmpuint (back->timings->len, ==, 2);
  g_assert_cmpfloat (g_array_index (back->timings, TsTokenTimings, 0).ms[TS_STAGE_FORWARD], ==, 1.25);
  g_assert_cmpfloat (g_array_index (back->timings, TsTokenTimings, 1).ms[TS_STAGE_FORWARD], ==, 2.5);
  g_assert_cmpfloat (g_array_index (back->timings, TsTokenTimings, 1).ms[TS_STAGE_EVALUATE], ==, 7.5);
  g_assert_cmpfloat (g_array_index (back->timings, TsTokenTimings, 1).ms[TS_STAGE_ENCRYPT], ==, 0);
  g_assert_cmpuint (g_array_index (back->timings, TsTokenTimings, 1).bytes_up, ==, 131072);
  g_assert_cmpuint (g_array_index (back->timings, TsTokenTimings, 1).bytes_down, ==, 65536);
  g_assert_cmpstr (g_ptr_array_index (back->texts, 1), ==, "⏎");
  ts_test_remove_tree (dir);
}

/* A stage this version does not know is ignored, one it knows but the
 * text lacks reads 0 ms; what is not statistics is refused by name. */
static void
test_stats_from_other_versions (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistoryReplyStats) stats =
    ts_history_reply_stats_from_json ("{\"n_tokens\": 1, \"bars\": [{\"text\": \"a\","
                                      " \"ms\": {\"forward\": 4, \"warp\": 9}}]}", &error);
  g_autoptr (TsHistoryReplyStats) bad = NULL;

  g_assert_no_error (error);
  g_assert_cmpuint (stats->timings->len, ==, 1);
  g_assert_cmpfloat (g_array_index (stats->timings, TsTokenTimings, 0).ms[TS_STAGE_FORWARD], ==, 4);
  g_assert_cmpfloat (g_array_index (stats->timings, TsTokenTimings, 0).ms[TS_STAGE_SAMPLE], ==, 0);
  g_assert_cmpint (stats->diverged_at, ==, -1);
  bad = ts_history_reply_stats_from_json ("{\"bars\": [3]}", &error);
  g_assert_null (bad);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
  g_assert_nonnull (strstr (error->message, "bar 1"));
}

/* Every field set away from its default, read back through a new open. */
static void
test_settings_round_trip (void)
{
  g_autofree char *dir = g_dir_make_tmp ("tensafe-history-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "history.sqlite", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistory) history = ts_history_open (path, &error);
  g_autoptr (TsConversationSettings) mine = ts_conversation_settings_new ();
  g_autoptr (TsConversationSettings) back = NULL;
  g_autoptr (TsConversationSettings) other = NULL;
  gint64 a, b;

  g_assert_no_error (error);
  a = ts_history_create (history, "A", &error);
  b = ts_history_create (history, "B", &error);
  g_assert_no_error (error);
  g_free (mine->system_prompt);
  mine->system_prompt = g_strdup ("Line one \"quoted\"\nline two é");
  mine->temperature = 0.7;
  mine->top_k = 12;
  mine->top_p = 0.9;
  mine->min_p = 0.1;
  mine->repeat_penalty = 1.15;
  mine->seed = -1;
  mine->context_length = 512;
  g_assert_true (ts_history_set_settings (history, a, mine, &error));
  g_assert_no_error (error);
  g_clear_pointer (&history, ts_history_close);
  history = ts_history_open (path, &error);
  g_assert_no_error (error);
  g_assert_true (ts_history_get_settings (history, a, &back, &error));
  g_assert_nonnull (back);
  g_assert_cmpstr (back->system_prompt, ==, "Line one \"quoted\"\nline two é");
  g_assert_cmpfloat (back->temperature, ==, 0.7);
  g_assert_cmpint (back->top_k, ==, 12);
  g_assert_cmpfloat (back->top_p, ==, 0.9);
  g_assert_cmpfloat (back->min_p, ==, 0.1);
  g_assert_cmpfloat (back->repeat_penalty, ==, 1.15);
  g_assert_cmpint (back->seed, ==, -1);
  g_assert_cmpuint (back->context_length, ==, 512);
  /* The other conversation kept nothing; NULL goes back to the defaults. */
  g_assert_true (ts_history_get_settings (history, b, &other, &error));
  g_assert_null (other);
  g_assert_true (ts_history_set_settings (history, a, NULL, &error));
  g_clear_pointer (&back, ts_conversation_settings_free);
  g_assert_true (ts_history_get_settings (history, a, &back, &error));
  g_assert_null (back);
  /* Out of range is refused with the value named; no such conversation is an error. */
  mine->top_p = 0;
  g_assert_false (ts_history_set_settings (history, a, mine, &error));
  g_assert_error (error, TS_CONVERSATION_SETTINGS_ERROR, TS_CONVERSATION_SETTINGS_ERROR_RANGE);
  g_assert_nonnull (strstr (error->message, "Top-p"));
  g_clear_error (&error);
  g_assert_false (ts_history_get_settings (history, 999, &back, &error));
  g_assert_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_NOT_FOUND);
  g_clear_pointer (&history, ts_history_close);
  ts_test_remove_tree (dir);
}

/* Three exchanges with stats; truncating at the second prompt leaves the
 * first exchange only, and another conversation untouched. */
static void
test_truncate (void)
{
  g_autofree char *dir = g_dir_make_tmp ("tensafe-history-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "history.sqlite", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistory) history = ts_history_open (path, &error);
  g_autoptr (TsHistoryReplyStats) stats = ts_history_reply_stats_new ();
  g_autoptr (GPtrArray) messages = NULL;
  gint64 conv, other, prompts[3];
  sqlite3 *db = NULL;
  sqlite3_stmt *stmt = NULL;

  g_assert_no_error (error);
  conv = ts_history_create (history, "Three", &error);
  other = ts_history_create (history, "Other", &error);
  for (int i = 0; i < 3; i++)
    {
      g_autofree char *text = g_strdup_printf ("prompt %d", i);

      prompts[i] = ts_history_add_message (history, conv, TRUE, TS_HISTORY_PANE_BOTH, text, TRUE, &error);
      for (int pane = TS_HISTORY_PANE_PLAIN; pane <= TS_HISTORY_PANE_HE; pane++)
        {
          gint64 reply = ts_history_add_message (history, conv, FALSE, pane, "answer", TRUE, &error);

          stats->n_tokens = (guint) (10 * i + pane);
          g_assert_true (ts_history_set_stats (history, reply, stats, &error));
        }
      ts_history_add_message (history, other, TRUE, TS_HISTORY_PANE_BOTH, text, TRUE, &error);
    }
  g_assert_no_error (error);
  g_assert_true (ts_history_truncate (history, conv, prompts[1], &error));
  g_assert_no_error (error);
  messages = ts_history_messages (history, conv, &error);
  g_assert_cmpuint (messages->len, ==, 3);
  g_assert_cmpint (((TsHistoryMessage *) g_ptr_array_index (messages, 0))->id, ==, prompts[0]);
  g_assert_cmpstr (((TsHistoryMessage *) g_ptr_array_index (messages, 0))->content, ==, "prompt 0");
  g_assert_cmpuint (((TsHistoryMessage *) g_ptr_array_index (messages, 1))->stats->n_tokens, ==, 1);
  g_assert_cmpuint (((TsHistoryMessage *) g_ptr_array_index (messages, 2))->stats->n_tokens, ==, 2);
  g_ptr_array_unref (messages);
  messages = ts_history_messages (history, other, &error);
  g_assert_cmpuint (messages->len, ==, 3);
  /* Counted in the file itself: no row with stats is left behind. */
  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "SELECT count(*), count(stats) FROM messages", -1, &stmt,
                                       NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_step (stmt), ==, SQLITE_ROW);
  g_assert_cmpint (sqlite3_column_int (stmt, 0), ==, 6);
  g_assert_cmpint (sqlite3_column_int (stmt, 1), ==, 2);
  sqlite3_finalize (stmt);
  sqlite3_close (db);
  g_clear_pointer (&history, ts_history_close);
  ts_test_remove_tree (dir);
}


int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/history/old-files-open", test_old_files_open);
  g_test_add_func ("/history/stats-round-trip", test_stats_round_trip);
  g_test_add_func ("/history/stats-from-other-versions", test_stats_from_other_versions);
  g_test_add_func ("/history/thinking-round-trip", test_thinking_round_trip);
  g_test_add_func ("/history/version-4-file-opens", test_version_4_file_opens);
  g_test_add_func ("/history/settings-round-trip", test_settings_round_trip);
  g_test_add_func ("/history/truncate", test_truncate);
  return g_test_run ();
}
