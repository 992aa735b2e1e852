/* gui-evaluator.c: a real tensafe-he-server on 127.0.0.1 for the GUI tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "gui-evaluator.h"

#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>

#include "ts-chat-page.h"

#define DEMO_ADAPTER "tiny-qwen35moe-lora-f32.gguf"

static void
die_with_parent (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGTERM);
}

char *
gui_evaluator_demo_dir (void)
{
  g_autofree char *adapter = ts_chat_page_find_demo_file (DEMO_ADAPTER);
  g_autofree char *dir = NULL;
  g_autofree char *copy = NULL;
  g_autofree char *contents = NULL;
  g_autoptr (GError) error = NULL;
  gsize len;

  dir = g_dir_make_tmp ("tensafe-evaluator-XXXXXX", &error);
  g_assert_no_error (error);
  copy = g_build_filename (dir, DEMO_ADAPTER, NULL);
  g_assert_true (g_file_get_contents (adapter, &contents, &len, NULL));
  g_assert_true (g_file_set_contents (copy, contents, (gssize) len, NULL));
  return g_steal_pointer (&dir);
}

void
gui_evaluator_start (GuiEvaluator *s, const char *dir, const char *const *args)
{
  g_autoptr (GStrvBuilder) argv = g_strv_builder_new ();
  g_auto (GStrv) command = NULL;
  g_autofree char *line = NULL;
  g_autoptr (GDataInputStream) out = NULL;
  g_autoptr (GSubprocessLauncher) launcher = NULL;
  g_autoptr (GError) error = NULL;
  guint port;

  g_assert_null (s->process);
  g_strv_builder_add_many (argv, TS_HE_SERVER_PATH, "--listen", "127.0.0.1:0", "--adapters", dir,
                           NULL);
  for (guint i = 0; args != NULL && args[i] != NULL; i++)
    g_strv_builder_add (argv, args[i]);
  command = g_strv_builder_end (argv);
  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  /* A failed assertion aborts the test: the server must not outlive it. */
  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
  s->process = g_subprocess_launcher_spawnv (launcher, (const char *const *) command, &error);
  g_assert_no_error (error);
  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (s->process));
  line = g_data_input_stream_read_line_utf8 (out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (line);
  g_assert_cmpint (sscanf (line, "listening on http://127.0.0.1:%u/", &port), ==, 1);
  g_free (s->ws_url);
  s->ws_url = g_strdup_printf ("ws://127.0.0.1:%u/v1/helora", port);
}

void
gui_evaluator_stop (GuiEvaluator *s)
{
  g_subprocess_send_signal (s->process, SIGTERM);
  g_assert_true (g_subprocess_wait (s->process, NULL, NULL));
  g_clear_object (&s->process);
}

void
gui_evaluator_clear (GuiEvaluator *s)
{
  if (s->process != NULL)
    gui_evaluator_stop (s);
  g_clear_pointer (&s->ws_url, g_free);
}
