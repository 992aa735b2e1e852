/* test-pages.c: each page widget builds from its template and is freed when
 * dropped, including the benchmark page while its GPU probe is in flight;
 * every page is built with its settings and keeps them.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>

#include "ts-application.h"
#include "ts-bench-page.h"
#include "ts-chat-page.h"
#include "ts-keys-page.h"
#include "ts-marketplace-page.h"

static GtkWidget *
find_status_page (GtkWidget *widget)
{
  if (ADW_IS_STATUS_PAGE (widget) && gtk_widget_get_child_visible (widget))
    return widget;
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_status_page (child);

      if (found != NULL)
        return found;
    }
  return NULL;
}

static void
test_page_lifecycle (gconstpointer data)
{
  GType type = GPOINTER_TO_SIZE (data);
  g_autoptr (TsSettings) settings = ts_settings_new_default ();
  GtkWidget *page = g_object_ref_sink (g_object_new (type, "settings", settings, NULL));
  AdwStatusPage *status = ADW_STATUS_PAGE (find_status_page (page));

  /* Every page starts on a status page with a title of its own (its empty
   * state, or the page itself until its feature lands). */
  g_assert_true (ADW_IS_STATUS_PAGE (status));
  g_assert_cmpuint (strlen (adw_status_page_get_title (status)), >, 0);
  g_assert_cmpstr (adw_status_page_get_icon_name (status), !=, NULL);
  g_assert_finalize_object (page);
}

/* Dropping the page cancels its probe; the late callback must not touch it
 * (ASan builds catch a use after free here). */
static void
test_bench_page_dropped_while_probing (void)
{
  g_autoptr (TsSettings) settings = ts_settings_new_default ();
  GtkWidget *page = g_object_ref_sink (g_object_new (TS_TYPE_BENCH_PAGE, "settings", settings,
                                                     NULL));

  g_assert_cmpstr (ts_bench_page_get_gpu_summary (TS_BENCH_PAGE (page)), ==, "Probing…");
  g_assert_finalize_object (page);
  /* The cancelled task queued its callback at once (return-on-cancel). */
  while (g_main_context_pending (NULL))
    g_main_context_iteration (NULL, FALSE);
}

/* A page is built with the application's settings or not at all: none
 * exists without them, so none has to guess what to do meanwhile. */
static void
test_page_needs_settings (gconstpointer data)
{
  GType type = GPOINTER_TO_SIZE (data);

  if (g_test_subprocess ())
    {
      g_object_ref_sink (g_object_new (type, NULL));
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*CRITICAL*TS_IS_SETTINGS*");
}

/* ... and keeps the ones it was built with. */
static void
test_page_keeps_settings (gconstpointer data)
{
  GType type = GPOINTER_TO_SIZE (data);
  g_autoptr (TsSettings) settings = ts_settings_new_default ();
  g_autoptr (TsSettings) other = ts_settings_new_default ();
  GtkWidget *page = g_object_ref_sink (g_object_new (type, "settings", settings, NULL));
  TsSettings *got = NULL;

  if (g_test_subprocess ())
    {
      g_object_set (page, "settings", other, NULL);
      return;
    }
  g_object_get (page, "settings", &got, NULL);
  g_assert_true (got == settings);
  g_object_unref (got);
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_failed ();
  g_test_trap_assert_stderr ("*construct*settings*");
  g_assert_finalize_object (page);
}

static void
add_settings_tests (const char *name, GType type)
{
  g_autofree char *needs = g_strdup_printf ("/pages/%s/needs-settings", name);
  g_autofree char *keeps = g_strdup_printf ("/pages/%s/keeps-settings", name);

  g_test_add_data_func (needs, GSIZE_TO_POINTER (type), test_page_needs_settings);
  g_test_add_data_func (keeps, GSIZE_TO_POINTER (type), test_page_keeps_settings);
}

static void
test_no_display (void)
{
  g_test_skip ("no display: run the gui suite under xvfb-run");
}

int
main (int argc, char **argv)
{
  g_autoptr (TsApplication) app = NULL;

  g_test_init (&argc, &argv, NULL);
  if (!gtk_init_check ())
    {
      g_test_add_func ("/pages/no-display", test_no_display);
      return g_test_run ();
    }
  adw_init ();
  /* Creating the application registers the resources the templates load from. */
  app = ts_application_new (G_APPLICATION_NON_UNIQUE);

  g_test_add_data_func ("/pages/keys", GSIZE_TO_POINTER (TS_TYPE_KEYS_PAGE),
                        test_page_lifecycle);
  g_test_add_data_func ("/pages/bench", GSIZE_TO_POINTER (TS_TYPE_BENCH_PAGE),
                        test_page_lifecycle);
  g_test_add_func ("/pages/bench-dropped-while-probing", test_bench_page_dropped_while_probing);
  add_settings_tests ("chat", TS_TYPE_CHAT_PAGE);
  add_settings_tests ("market", TS_TYPE_MARKETPLACE_PAGE);
  add_settings_tests ("keys", TS_TYPE_KEYS_PAGE);
  add_settings_tests ("bench", TS_TYPE_BENCH_PAGE);
  return g_test_run ();
}
