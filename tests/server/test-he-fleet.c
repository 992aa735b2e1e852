/* test-he-fleet.c: evaluators as a fleet: draining, and three behind HAProxy with faults.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The real tensafe-he-server binaries on 127.0.0.1. The HAProxy test runs
 * deploy/haproxy.cfg-template itself (the file docs/deploy.md shows) with
 * this test's addresses in its environment, and skips only when haproxy is
 * not installed. Clients are tensafe-cli generate processes through the
 * proxy: TENSAFE_FLEET_CLIENTS of them (default FLEET_CLIENTS: 50, or 12
 * in a sanitizer build).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <libsoup/soup.h>

#include "ckks-client.h"
#include "he-process.h"
#include "ts-helora-remote.h"
#include "ts-test-util.h"

/* How long a server may take to exit once it stopped or was killed: a 5 s
 * wait ran out once under AddressSanitizer (its leak check at exit), with
 * the suite's other test beside it on two cores. */
#define EXIT_WAIT_MS 30000

#define GOLDEN "qwen35/tiny-qwen35moe-f32/"
#define GOLDEN_LORA GOLDEN "lora/tiny-qwen35moe-lora-f32.gguf"
#define LORA_NAME "tiny-qwen35moe-lora-f32.gguf"

/* One adapter directory: the one place every evaluator of the fleet serves from. */
static char *
make_adapters (char **lora_path)
{
  g_autoptr (GError) error = NULL;
  char *dir = g_dir_make_tmp ("he-fleet-XXXXXX", &error);
  gsize len;
  g_autofree guint8 *data = ts_test_read_data (GOLDEN_LORA, &len);

  g_assert_no_error (error);
  *lora_path = g_build_filename (dir, LORA_NAME, NULL);
  g_assert_true (g_file_set_contents (*lora_path, (const char *) data, len, &error));
  return dir;
}

static void
wait_for_status (HeProcess *p, const char *path, guint want, const char *body)
{
  guint status = 0;
  g_autofree char *text = NULL;

  for (int i = 0; i < 1000 && status != want; i++)
    {
      g_free (text);
      text = he_process_get (p, path, &status);
      if (status != want)
        g_usleep (10000);
    }
  g_assert_cmpuint (status, ==, want);
  if (body != NULL)
    g_assert_cmpstr (text, ==, body);
}

/* SIGUSR1: /healthz says draining, a new client's hello is refused, the
 * session already open is served to its end, then the process exits 0. */
static void
test_drain_signal (void)
{
  g_autofree char *lora = NULL;
  g_autofree char *dir = make_adapters (&lora);
  const char *extra[] = { "--drain-timeout", "60", NULL };
  HeProcess p = { 0 };
  CkksClient *client = ckks_client_new ("fast", lora);
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) hello = NULL, refused = NULL;
  TsHeloraRemote *open_session, *late;

  he_process_start (&p, HE_SERVER_PATH, dir, 0, extra);
  open_session = ckks_client_connect (client, p.ws_url);
  ckks_client_assert_evaluates (client, open_session, 0, rng);
  g_subprocess_send_signal (p.process, SIGUSR1);
  wait_for_status (&p, "healthz", 503, "draining\n");

  /* a newcomer gets no session: its handshake refused with 503 (or, had
   * it come just before, its hello) */
  late = ts_helora_remote_connect (p.ws_url, 5000, &error);
  if (late == NULL)
    g_assert_nonnull (strstr (error->message, "HTTP 503"));
  else
    {
      hello = ckks_client_hello (client);
      refused = ts_helora_remote_hello (late, &hello->u.hello, &error);
      g_assert_null (refused);
      g_assert_true (g_error_matches (error, TS_HELORA_ERROR, TS_HELORA_ERROR_SHUTTING_DOWN)
                     || g_error_matches (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED));
      ts_helora_remote_free (late);
    }
  g_test_message ("newcomer while draining: %s", error->message);

  /* the open session goes on, several requests long */
  for (int i = 0; i < 3; i++)
    ckks_client_assert_evaluates (client, open_session, 0, rng);
  g_assert_false (ts_helora_remote_is_closed (open_session));
  ts_helora_remote_free (open_session);
  g_assert_cmpint (he_process_wait (&p, EXIT_WAIT_MS), ==, 0);
  he_process_clear (&p);
  ckks_client_free (client);
  ts_test_remove_tree (dir);
}

/* POST /admin/drain from loopback does the same; with nothing open the
 * process exits at once. */
static void
test_drain_admin (void)
{
  g_autofree char *lora = NULL;
  g_autofree char *dir = make_adapters (&lora);
  HeProcess p = { 0 };
  g_autoptr (SoupSession) session = soup_session_new ();
  g_autofree char *url = NULL;
  g_autoptr (SoupMessage) get = NULL, post = NULL;
  g_autoptr (GBytes) body = NULL;
  g_autoptr (GError) error = NULL;

  he_process_start (&p, HE_SERVER_PATH, dir, 0, NULL);
  url = g_strconcat (p.url, "admin/drain", NULL);
  get = soup_message_new ("GET", url);
  g_bytes_unref (soup_session_send_and_read (session, get, NULL, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (soup_message_get_status (get), ==, SOUP_STATUS_METHOD_NOT_ALLOWED);
  post = soup_message_new ("POST", url);
  body = soup_session_send_and_read (session, post, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (soup_message_get_status (post), ==, SOUP_STATUS_OK);
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body),
                                  "\"draining\":true"));
  g_assert_cmpint (he_process_wait (&p, EXIT_WAIT_MS), ==, 0);
  he_process_clear (&p);
  ts_test_remove_tree (dir);
}

/* ---- the fleet behind HAProxy ---- */

static char *
find_haproxy (void)
{
  char *path = g_find_program_in_path ("haproxy");

  if (path == NULL && g_file_test ("/usr/sbin/haproxy", G_FILE_TEST_IS_EXECUTABLE))
    path = g_strdup ("/usr/sbin/haproxy");
  return path;
}

static guint16
free_port (void)
{
  g_autoptr (GSocket) s = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
                                        G_SOCKET_PROTOCOL_TCP, NULL);
  g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr (GSocketAddress) any = g_inet_socket_address_new (lo, 0);
  g_autoptr (GSocketAddress) bound = NULL;

  g_assert_true (g_socket_bind (s, any, FALSE, NULL));
  bound = g_socket_get_local_address (s, NULL);
  return g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
}

typedef struct {
  char *dir;                   /* the adapters; nothing else (evaluators read it all) */
  char *work;                  /* HAProxy's socket and log, the clients' output */
  char *lora;
  HeProcess he[3];
  GSubprocess *haproxy;
  char *socket;                /* HAProxy's admin socket */
  char *url;                   /* ws:// of its frontend */
} Fleet;

/* HAProxy's view of server @name ("UP", "DOWN", …) from "show stat". */
static char *
haproxy_status (Fleet *f, const char *name)
{
  g_autoptr (GSocketClient) client = g_socket_client_new ();
  g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (f->socket);
  g_autoptr (GSocketConnection) conn = g_socket_client_connect (client, G_SOCKET_CONNECTABLE (addr),
                                                                NULL, NULL);
  g_autoptr (GString) text = g_string_new (NULL);
  g_auto (GStrv) lines = NULL;
  char buf[4096];
  gssize n;

  if (conn == NULL)
    return g_strdup ("no socket");
  g_output_stream_write_all (g_io_stream_get_output_stream (G_IO_STREAM (conn)), "show stat\n",
                             10, NULL, NULL, NULL);
  while ((n = g_input_stream_read (g_io_stream_get_input_stream (G_IO_STREAM (conn)), buf,
                                   sizeof buf, NULL, NULL)) > 0)
    g_string_append_len (text, buf, n);
  lines = g_strsplit (text->str, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      g_auto (GStrv) fields = g_strsplit (lines[i], ",", 20);
      if (g_strv_length (fields) > 17 && g_str_equal (fields[0], "evaluators")
          && g_str_equal (fields[1], name))
        return g_strdup (fields[17]);
    }
  return g_strdup ("missing");
}

/* Polls HAProxy until @name is @want (prefix: "UP" also matches "UP 1/2");
 * returns the milliseconds it took. */
static double
wait_haproxy (Fleet *f, const char *name, const char *want, guint timeout_ms)
{
  gint64 t0 = g_get_monotonic_time ();
  g_autofree char *status = NULL;

  while ((g_get_monotonic_time () - t0) / 1000 < timeout_ms)
    {
      g_free (status);
      status = haproxy_status (f, name);
      if (g_str_equal (status, want))
        break;
      g_usleep (20000);
    }
  g_assert_cmpstr (status, ==, want);
  return (g_get_monotonic_time () - t0) / 1000.0;
}

static void
fleet_start (Fleet *f, const char *haproxy)
{
  const char *extra[] = { "--max-connections-per-address", "0", "--drain-timeout", "120", NULL };
  g_autoptr (GSubprocessLauncher) launcher = he_process_launcher (G_SUBPROCESS_FLAGS_NONE);
  g_autofree char *bind = g_strdup_printf ("127.0.0.1:%u", free_port ());
  g_autofree char *config = g_build_filename (DEPLOY_DIR, "haproxy.cfg-template", NULL);
  g_autofree char *log = NULL;
  g_autoptr (GError) error = NULL;

  f->dir = make_adapters (&f->lora);
  f->work = g_dir_make_tmp ("he-fleet-work-XXXXXX", &error);
  g_assert_no_error (error);
  for (guint i = 0; i < 3; i++)
    {
      g_autofree char *var = g_strdup_printf ("TENSAFE_HE%u", i + 1);
      g_autofree char *addr = NULL;
      he_process_start (&f->he[i], HE_SERVER_PATH, f->dir, 0, extra);
      addr = g_strdup_printf ("127.0.0.1:%u", f->he[i].port);
      g_subprocess_launcher_setenv (launcher, var, addr, TRUE);
    }
  f->socket = g_build_filename (f->work, "haproxy.sock", NULL);
  log = g_build_filename (f->work, "haproxy.log", NULL);
  g_subprocess_launcher_setenv (launcher, "TENSAFE_FLEET_BIND", bind, TRUE);
  g_subprocess_launcher_setenv (launcher, "TENSAFE_HAPROXY_SOCKET", f->socket, TRUE);
  g_subprocess_launcher_set_stdout_file_path (launcher, log);
  g_subprocess_launcher_set_stderr_file_path (launcher, log);
  f->haproxy = g_subprocess_launcher_spawn (launcher, &error, haproxy, "-f", config, "-db", NULL);
  g_assert_no_error (error);
  f->url = g_strdup_printf ("ws://%s", bind);
  for (guint i = 0; i < 3; i++)
    {
      g_autofree char *name = g_strdup_printf ("he%u", i + 1);
      wait_haproxy (f, name, "UP", 10000);
    }
}

static void
fleet_stop (Fleet *f)
{
  g_autofree char *log = g_build_filename (f->work, "haproxy.log", NULL);
  g_autofree char *text = NULL;

  g_subprocess_send_signal (f->haproxy, SIGTERM);
  g_subprocess_wait (f->haproxy, NULL, NULL);
  g_clear_object (&f->haproxy);
  if (g_file_get_contents (log, &text, NULL, NULL) && text[0] != '\0')
    g_test_message ("haproxy said: %s", text);
  for (guint i = 0; i < 3; i++)
    he_process_clear (&f->he[i]);
  ts_test_remove_tree (f->dir);
  ts_test_remove_tree (f->work);
  g_free (f->dir);
  g_free (f->work);
  g_free (f->lora);
  g_free (f->socket);
  g_free (f->url);
}

typedef struct {
  GSubprocess *process;
  char *out, *err;
} Client;

/* tensafe-cli generate --he ws://HAPROXY: the golden prompt, 32 greedy ids. */
static void
client_start (Client *c, Fleet *f, guint index)
{
  g_autofree char *model = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  g_autofree char *lora = ts_test_data_path (GOLDEN_LORA);
  gsize len;
  g_autofree gint32 *prompt = (gint32 *) ts_test_read_data (GOLDEN "prompt_tokens.bin", &len);
  g_autoptr (GString) tokens = g_string_new (NULL);
  g_autoptr (GSubprocessLauncher) launcher = he_process_launcher (G_SUBPROCESS_FLAGS_NONE);
  g_autoptr (GError) error = NULL;

  for (gsize i = 0; i < len / 4; i++)
    g_string_append_printf (tokens, "%s%d", i ? "," : "", prompt[i]);
  c->out = g_strdup_printf ("%s/client-%u.out", f->work, index);
  c->err = g_strdup_printf ("%s/client-%u.err", f->work, index);
  g_subprocess_launcher_set_stdout_file_path (launcher, c->out);
  g_subprocess_launcher_set_stderr_file_path (launcher, c->err);
  c->process = g_subprocess_launcher_spawn (launcher, &error, g_getenv ("TENSAFE_CLI"),
                                            "generate", "--model", model, "--lora", lora,
                                            "--tokens", tokens->str, "-n", "32", "--print-ids",
                                            "--threads", "1", "--he", f->url, NULL);
  g_assert_no_error (error);
}

typedef struct {
  guint clients, reconnected;
  guint64 resent;
  GArray *recovery_ms;         /* of double, one per client that reconnected */
} Outcome;

static guint64
number_before (const char *text, const char *words)
{
  const char *at = strstr (text, words);

  g_assert_nonnull (at);
  while (at > text && g_ascii_isdigit (at[-1]))
    at--;
  return g_ascii_strtoull (at, NULL, 10);
}

/* Every client finished with the golden ids and one answer applied per
 * encryption; what their recoveries took goes to @o. */
static void
client_finish (Client *c, const char *golden, Outcome *o)
{
  g_autofree char *out = NULL, *err = NULL;
  const char *rec;

  g_assert_true (g_subprocess_wait (c->process, NULL, NULL));
  g_assert_true (g_file_get_contents (c->out, &out, NULL, NULL));
  g_assert_true (g_file_get_contents (c->err, &err, NULL, NULL));
  if (g_subprocess_get_exit_status (c->process) != 0)
    g_test_message ("client failed: %s", err);
  g_assert_cmpint (g_subprocess_get_exit_status (c->process), ==, 0);
  g_assert_cmpstr (g_strstrip (out), ==, golden);
  g_assert_cmpuint (number_before (err, " answers applied"), ==,
                    number_before (err, " encryptions"));
  o->clients++;
  if (number_before (err, " reconnects") > 0)
    {
      double ms;
      rec = strstr (err, "longest recovery ");
      g_assert_nonnull (rec);
      ms = g_ascii_strtod (rec + strlen ("longest recovery "), NULL);
      o->reconnected++;
      o->resent += number_before (err, " requests resent");
      g_array_append_val (o->recovery_ms, ms);
    }
  g_clear_object (&c->process);
  g_free (c->out);
  g_free (c->err);
}

static char *
golden_ids (void)
{
  gsize len;
  g_autofree gint32 *ids = (gint32 *) ts_test_read_data (GOLDEN "lora_greedy_tokens.bin", &len);
  GString *s = g_string_new (NULL);

  for (gsize i = 0; i < len / 4; i++)
    g_string_append_printf (s, "%s%d", i ? " " : "", ids[i]);
  return g_string_free (s, FALSE);
}

static void
wait_metric (HeProcess *p, const char *name, double at_least)
{
  for (int i = 0; i < 3000 && he_process_metric (p, name) < at_least; i++)
    g_usleep (10000);
  g_assert_cmpfloat (he_process_metric (p, name), >=, at_least);
}

static int
compare_doubles (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

static guint
n_clients (void)
{
  const char *env = g_getenv ("TENSAFE_FLEET_CLIENTS");

  return env != NULL && atoi (env) > 0 ? (guint) atoi (env) : FLEET_CLIENTS;
}

/* Three evaluators behind HAProxy, many clients generating: kill -9 one
 * evaluator mid-stream, then drain another and start it again. Every
 * client ends with the golden tokens (an independent implementation's, the
 * same a fault-free run gives), no answer is applied twice, and the
 * restarted evaluator takes new clients. */
static void
test_haproxy_faults (void)
{
  g_autofree char *haproxy = find_haproxy ();
  g_autofree char *golden = golden_ids ();
  guint n = n_clients (), second = MAX (n / 10, 4);
  g_autofree Client *clients = g_new0 (Client, n + second);
  Outcome o = { .recovery_ms = g_array_new (FALSE, FALSE, sizeof (double)) };
  const char *extra[] = { "--max-connections-per-address", "0", "--drain-timeout", "120", NULL };
  Fleet f = { 0 };
  Outcome reference = { .recovery_ms = g_array_new (FALSE, FALSE, sizeof (double)) };
  gint64 t0, t_kill, t_drain;
  double down_ms, drain_ms, up_ms, wall_s;

  if (haproxy == NULL)
    {
      g_test_skip ("haproxy is not installed (Debian package haproxy)");
      return;
    }
  fleet_start (&f, haproxy);
  /* a fault-free run through the proxy first */
  client_start (&clients[0], &f, 0);
  client_finish (&clients[0], golden, &reference);
  g_assert_cmpuint (reference.reconnected, ==, 0);

  t0 = g_get_monotonic_time ();
  for (guint i = 0; i < n; i++)
    client_start (&clients[i], &f, i);
  /* mid-stream: he1 has clients and has answered some of their requests */
  wait_metric (&f.he[0], "tensafe_he_requests_total", 20);
  wait_metric (&f.he[0], "tensafe_he_connected_clients", 1);
  g_subprocess_send_signal (f.he[0].process, SIGKILL);
  t_kill = g_get_monotonic_time ();
  g_assert_cmpint (he_process_wait (&f.he[0], EXIT_WAIT_MS), ==, -1);
  wait_haproxy (&f, "he1", "DOWN", 10000);
  down_ms = (g_get_monotonic_time () - t_kill) / 1000.0;

  /* a rolling upgrade of he2: drain, wait for its sessions, start again */
  wait_metric (&f.he[1], "tensafe_he_connected_clients", 1);
  g_subprocess_send_signal (f.he[1].process, SIGUSR1);
  t_drain = g_get_monotonic_time ();
  wait_for_status (&f.he[1], "healthz", 503, "draining\n");
  g_assert_cmpint (he_process_wait (&f.he[1], 120000), ==, 0);
  drain_ms = (g_get_monotonic_time () - t_drain) / 1000.0;
  he_process_start (&f.he[1], HE_SERVER_PATH, f.dir, f.he[1].port, extra);
  up_ms = wait_haproxy (&f, "he2", "UP", 15000);

  for (guint i = 0; i < n; i++)
    client_finish (&clients[i], golden, &o);
  wall_s = (g_get_monotonic_time () - t0) / 1e6;
  /* new clients after the upgrade: the restarted he2 serves again */
  for (guint i = 0; i < second; i++)
    client_start (&clients[n + i], &f, n + i);
  for (guint i = 0; i < second; i++)
    client_finish (&clients[n + i], golden, &o);
  g_assert_cmpfloat (he_process_metric (&f.he[1], "tensafe_he_requests_total"), >, 0);

  g_array_sort (o.recovery_ms, compare_doubles);
  g_test_message ("%u clients (%u, then %u after the restart) all gave the golden tokens in "
                  "%.1f s; kill -9 of he1: HAProxy marked it down after %.0f ms; %u clients "
                  "reconnected, %" G_GUINT64_FORMAT " requests resent, recovery median %.0f ms, "
                  "longest %.0f ms; drain of he2 took %.1f s, its restart was up in HAProxy "
                  "%.1f s later", o.clients, n, second, wall_s, down_ms, o.reconnected, o.resent,
                  o.reconnected ? g_array_index (o.recovery_ms, double, o.reconnected / 2) : 0.0,
                  o.reconnected ? g_array_index (o.recovery_ms, double, o.reconnected - 1) : 0.0,
                  drain_ms / 1000, up_ms / 1000);
  /* With 50 clients he1 always has several mid-stream at the kill (15 and
   * 16 reconnected in two runs). With the dozen of a sanitizer build a kill
   * can land after each of he1's clients had its last answer, and then no
   * one has anything to resend: the golden tokens of every client (below)
   * still hold. */
  if (n >= 50)
    g_assert_cmpuint (o.reconnected, >=, 1);
  g_assert_cmpuint (o.clients, ==, n + second);
  g_array_unref (o.recovery_ms);
  g_array_unref (reference.recovery_ms);
  fleet_stop (&f);
}

/* docs/deploy.md shows the configuration this test runs, word for word
 * (the file's header comments aside). */
static void
test_docs_show_config (void)
{
  g_autofree char *config_path = g_build_filename (DEPLOY_DIR, "haproxy.cfg-template", NULL);
  g_autofree char *docs_path = g_build_filename (DEPLOY_DIR, "..", "docs", "deploy.md", NULL);
  g_autofree char *config = NULL, *docs = NULL;
  const char *body;

  g_assert_true (g_file_get_contents (config_path, &config, NULL, NULL));
  g_assert_true (g_file_get_contents (docs_path, &docs, NULL, NULL));
  body = strstr (config, "\nglobal\n");
  g_assert_nonnull (body);
  g_assert_nonnull (strstr (docs, body + 1));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/he-fleet/drain-signal", test_drain_signal);
  g_test_add_func ("/he-fleet/drain-admin", test_drain_admin);
  g_test_add_func ("/he-fleet/docs-show-config", test_docs_show_config);
  g_test_add_func ("/he-fleet/haproxy-faults", test_haproxy_faults);
  return g_test_run ();
}
