/* test-he-server-binary.c: the tensafe-he-server executable: startup line, health, SIGTERM.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <signal.h>
#include <string.h>

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <libsoup/soup.h>

#include "ts-helora-remote.h"

typedef struct {
  GSubprocess *process;
  char *url;
  char *dir;
} Server;

static void
server_start (Server *s, const char *const *extra)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GDataInputStream) out = NULL;
  g_autofree char *line = NULL;

  s->dir = g_dir_make_tmp ("he-server-bin-XXXXXX", &error);
  g_assert_no_error (error);
  g_ptr_array_add (argv, (gpointer) HE_SERVER_PATH);
  g_ptr_array_add (argv, (gpointer) "--listen");
  g_ptr_array_add (argv, (gpointer) "127.0.0.1:0");
  g_ptr_array_add (argv, (gpointer) "--adapters");
  g_ptr_array_add (argv, s->dir);
  for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) extra[i]);
  g_ptr_array_add (argv, NULL);
  s->process = g_subprocess_newv ((const char *const *) argv->pdata,
                                  G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error);
  g_assert_no_error (error);
  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (s->process));
  line = g_data_input_stream_read_line_utf8 (out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (line);
  g_assert_true (g_str_has_prefix (line, "listening on http://127.0.0.1:"));
  s->url = g_strdup (line + strlen ("listening on "));
}

static void
server_stop (Server *s, int expected_status)
{
  g_autoptr (GError) error = NULL;

  g_subprocess_send_signal (s->process, SIGTERM);
  g_assert_true (g_subprocess_wait (s->process, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (g_subprocess_get_if_exited (s->process));
  g_assert_cmpint (g_subprocess_get_exit_status (s->process), ==, expected_status);
  g_object_unref (s->process);
  g_rmdir (s->dir);
  g_free (s->dir);
  g_free (s->url);
}

static char *
http_get (const char *base, const char *path)
{
  g_autoptr (SoupSession) session = soup_session_new ();
  g_autofree char *url = g_strconcat (base, path, NULL);
  g_autoptr (SoupMessage) msg = soup_message_new ("GET", url);
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) body = soup_session_send_and_read (session, msg, NULL, &error);

  g_assert_no_error (error);
  g_assert_cmpuint (soup_message_get_status (msg), ==, SOUP_STATUS_OK);
  return g_strndup (g_bytes_get_data (body, NULL), g_bytes_get_size (body));
}

static void
test_health_and_sigterm (void)
{
  Server s = { 0 };
  g_autofree char *health = NULL;
  g_autofree char *metrics = NULL;
  g_autofree char *ws = NULL;
  g_autoptr (GError) error = NULL;
  TsHeloraRemote *remote;

  server_start (&s, NULL);
  health = http_get (s.url, "healthz");
  g_assert_cmpstr (health, ==, "ok\n");
  /* A client still connected at SIGTERM gets a close and the server exits 0. */
  ws = g_strdup_printf ("ws%s", s.url + 4);
  remote = ts_helora_remote_connect (ws, 5000, &error);
  g_assert_no_error (error);
  metrics = http_get (s.url, "metrics");
  g_assert_nonnull (strstr (metrics, "tensafe_he_connected_clients 1\n"));
  server_stop (&s, 0);
  for (int i = 0; i < 200 && !ts_helora_remote_is_closed (remote); i++)
    g_usleep (10000);
  g_assert_true (ts_helora_remote_is_closed (remote));
  ts_helora_remote_free (remote);
}

static void
test_bad_options (void)
{
  const char *argv[] = { HE_SERVER_PATH, "--adapters", "/nonexistent/dir", "--listen", "127.0.0.1:0", NULL };
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error);

  g_assert_no_error (error);
  g_assert_true (g_subprocess_wait (p, NULL, &error));
  g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/he-server-binary/health-and-sigterm", test_health_and_sigterm);
  g_test_add_func ("/he-server-binary/bad-options", test_bad_options);
  return g_test_run ();
}
