/* test-history-search.c: ts_history_search() finds conversations by title
 * and by message text, ignoring case and accents, with % and _ taken as
 * themselves (not as LIKE's wildcards).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "ts-history.h"
#include "ts-test-util.h"

typedef struct {
  char *dir;
  TsHistory *history;
  gint64 cv, kernel, empty;
} Fixture;

static gint64
create (TsHistory *history, const char *title, const char *prompt, const char *reply)
{
  g_autoptr (GError) error = NULL;
  gint64 id = ts_history_create (history, title, &error);

  g_assert_no_error (error);
  if (prompt != NULL)
    {
      g_assert_cmpint (ts_history_add_message (history, id, TRUE, TS_HISTORY_PANE_BOTH, prompt,
                                               TRUE, &error), >, 0);
      g_assert_cmpint (ts_history_add_message (history, id, FALSE, TS_HISTORY_PANE_HE, reply,
                                               TRUE, &error), >, 0);
      g_assert_no_error (error);
    }
  return id;
}

/* "vmXswap" and "1000" in the first are what LIKE's _ and % would wrongly
 * match for "vm_swap" and "100%". */
static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  g_autofree char *path = NULL;
  g_autoptr (GError) error = NULL;

  f->dir = g_dir_make_tmp ("tensafe-search-XXXXXX", NULL);
  path = g_build_filename (f->dir, "history.sqlite", NULL);
  f->history = ts_history_open (path, &error);
  g_assert_no_error (error);
  f->cv = create (f->history, "Résumé tips", "How long should a CV be?",
                  "One page is enough; vmXswap 1000 words at most.");
  f->kernel = create (f->history, "Kernel tuning", "Set vm_swappiness?",
                      "Use 10 on SSDs: 100% of the gain, Straße-tested.");
  f->empty = create (f->history, "Untitled", NULL, NULL);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  ts_history_close (f->history);
  ts_test_remove_tree (f->dir);
  g_free (f->dir);
}

/* The ids ts_history_search() returns for @query, in order, as a string
 * such as "2 1" ("" when none). */
static char *
found (Fixture *f, const char *query)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) list = ts_history_search (f->history, query, &error);
  GString *ids = g_string_new (NULL);

  g_assert_no_error (error);
  g_assert_nonnull (list);
  for (guint i = 0; i < list->len; i++)
    g_string_append_printf (ids, "%s%" G_GINT64_FORMAT, i > 0 ? " " : "",
                            ((TsHistoryConversation *) g_ptr_array_index (list, i))->id);
  return g_string_free (ids, FALSE);
}

static char *
ids (gint64 a, gint64 b, gint64 c)
{
  GString *s = g_string_new (NULL);
  gint64 all[] = { a, b, c };

  for (guint i = 0; i < G_N_ELEMENTS (all); i++)
    if (all[i] != 0)
      g_string_append_printf (s, "%s%" G_GINT64_FORMAT, s->len > 0 ? " " : "", all[i]);
  return g_string_free (s, FALSE);
}

static void
assert_found (Fixture *f, const char *query, gint64 a, gint64 b, gint64 c)
{
  g_autofree char *got = found (f, query);
  g_autofree char *expected = ids (a, b, c);

  if (g_strcmp0 (got, expected) != 0)
    g_error ("“%s” found [%s], expected [%s]", query, got, expected);
}

static void
test_title (Fixture *f, gconstpointer data)
{
  assert_found (f, "tuning", f->kernel, 0, 0);
  assert_found (f, "Untitled", f->empty, 0, 0);
}

static void
test_content (Fixture *f, gconstpointer data)
{
  /* In a prompt, in a reply. */
  assert_found (f, "CV be", f->cv, 0, 0);
  assert_found (f, "on SSDs", f->kernel, 0, 0);
}

static void
test_case_and_accents (Fixture *f, gconstpointer data)
{
  assert_found (f, "KERNEL", f->kernel, 0, 0);
  assert_found (f, "one PAGE", f->cv, 0, 0);
  assert_found (f, "resume", f->cv, 0, 0);
  assert_found (f, "RÉSUMÉ", f->cv, 0, 0);
  assert_found (f, "STRASSE", f->kernel, 0, 0);
}

static void
test_no_match (Fixture *f, gconstpointer data)
{
  assert_found (f, "zebra", 0, 0, 0);
}

static void
test_wildcards_are_plain (Fixture *f, gconstpointer data)
{
  assert_found (f, "100%", f->kernel, 0, 0);
  assert_found (f, "vm_swap", f->kernel, 0, 0);
  assert_found (f, "_", f->kernel, 0, 0);
  assert_found (f, "%", f->kernel, 0, 0);
}

/* No query: every conversation, newest first, as ts_history_list(). */
static void
test_empty_query (Fixture *f, gconstpointer data)
{
  assert_found (f, "", f->empty, f->kernel, f->cv);
  assert_found (f, "   ", f->empty, f->kernel, f->cv);
  assert_found (f, NULL, f->empty, f->kernel, f->cv);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
#define ADD(path, func) g_test_add (path, Fixture, NULL, fixture_set_up, func, fixture_tear_down)
  ADD ("/history-search/title", test_title);
  ADD ("/history-search/content", test_content);
  ADD ("/history-search/case-and-accents", test_case_and_accents);
  ADD ("/history-search/no-match", test_no_match);
  ADD ("/history-search/wildcards-are-plain", test_wildcards_are_plain);
  ADD ("/history-search/empty-query", test_empty_query);
#undef ADD
  return g_test_run ();
}
