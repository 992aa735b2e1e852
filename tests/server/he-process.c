/* he-process.c: tensafe-he-server processes on 127.0.0.1 for the fleet tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <libsoup/soup.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>

#include "he-process.h"
#include "ts-helora-proto.h"

static void
die_with_parent (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

GSubprocessLauncher *
he_process_launcher (GSubprocessFlags flags)
{
  GSubprocessLauncher *launcher = g_subprocess_launcher_new (flags);

  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
  return launcher;
}

void
he_process_start (HeProcess *p, const char *binary, const char *adapters, guint16 port,
                  const char *const *extra)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GDataInputStream) out = NULL;
  g_autoptr (GSubprocessLauncher) launcher = he_process_launcher (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  g_autofree char *line = NULL;
  const char *rest;

  g_ptr_array_add (argv, g_strdup (binary));
  g_ptr_array_add (argv, g_strdup ("--listen"));
  g_ptr_array_add (argv, g_strdup_printf ("127.0.0.1:%u", port));
  g_ptr_array_add (argv, g_strdup ("--adapters"));
  g_ptr_array_add (argv, g_strdup (adapters));
  for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
    g_ptr_array_add (argv, g_strdup (extra[i]));
  g_ptr_array_add (argv, NULL);
  p->process = g_subprocess_launcher_spawnv (launcher, (const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (p->process));
  line = g_data_input_stream_read_line_utf8 (out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (line);
  g_assert_true (g_str_has_prefix (line, "listening on http://127.0.0.1:"));
  rest = line + strlen ("listening on http://127.0.0.1:");
  p->port = (guint16) atoi (rest);
  g_assert_true (port == 0 || p->port == port);
  g_free (p->url);
  g_free (p->ws_url);
  p->url = g_strdup_printf ("http://127.0.0.1:%u/", p->port);
  p->ws_url = g_strdup_printf ("ws://127.0.0.1:%u%s", p->port, TS_HELORA_PATH);
}

static void
timeout_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  *(gboolean *) data = TRUE;
}

int
he_process_wait (HeProcess *p, guint timeout_ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
  gboolean done = FALSE;
  int status;

  g_subprocess_wait_async (p->process, NULL, timeout_cb, &done);
  while (!done && g_get_monotonic_time () < end)
    if (!g_main_context_iteration (NULL, FALSE))
      g_usleep (5000);
  g_assert_true (done);
  status = g_subprocess_get_if_exited (p->process) ? g_subprocess_get_exit_status (p->process)
                                                   : -1;
  g_clear_object (&p->process);
  return status;
}

void
he_process_clear (HeProcess *p)
{
  if (p->process != NULL)
    {
      g_subprocess_force_exit (p->process);
      g_subprocess_wait (p->process, NULL, NULL);
      g_clear_object (&p->process);
    }
  g_clear_pointer (&p->url, g_free);
  g_clear_pointer (&p->ws_url, g_free);
}

char *
he_process_get (HeProcess *p, const char *path, guint *status)
{
  g_autoptr (SoupSession) session = soup_session_new ();
  g_autofree char *url = g_strconcat (p->url, path, NULL);
  g_autoptr (SoupMessage) msg = soup_message_new ("GET", url);
  g_autoptr (GBytes) body = soup_session_send_and_read (session, msg, NULL, NULL);

  *status = soup_message_get_status (msg);
  return body != NULL ? g_strndup (g_bytes_get_data (body, NULL), g_bytes_get_size (body))
                      : g_strdup ("");
}

double
he_process_metric (HeProcess *p, const char *name)
{
  guint status;
  g_autofree char *text = he_process_get (p, "metrics", &status);
  g_autofree char *key = g_strconcat ("\n", name, " ", NULL);
  const char *at = strstr (text, key);

  return status == 200 && at != NULL ? g_ascii_strtod (at + strlen (key), NULL) : -1;
}
