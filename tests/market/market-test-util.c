/* market-test-util.c: spawning tensafe-marketd for tests and waiting on async results.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "market-test-util.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>

#include "lora-reduce.h"
#include "market-pg.h"
#include "ts-market-manifest.h"

static const char *
marketd_path (void)
{
  const char *env = g_getenv ("TENSAFE_MARKETD");

  return env ? env : MARKETD_PATH;
}

gboolean
market_use_postgresql (void)
{
  return g_strcmp0 (g_getenv ("TS_MARKET_DB"), "postgresql") == 0;
}

/* Runs before main: a test meant for PostgreSQL on a machine without it
 * skips as a whole, saying why (TAP: a plan of 0 with SKIP). */
__attribute__ ((constructor)) static void
skip_without_postgresql (void)
{
  g_autofree char *why_not = NULL, *bindir = NULL;

  if (!market_use_postgresql ())
    return;
  bindir = market_pg_bindir (&why_not);
  if (bindir == NULL)
    {
      printf ("1..0 # SKIP %s\n", why_not);
      exit (0);
    }
}

const char *
market_demo_dir (void)
{
  return MARKET_DEMO_DIR;
}

char *
market_tmpdir (void)
{
  g_autoptr(GError) error = NULL;
  char *dir = g_dir_make_tmp ("ts-market-XXXXXX", &error);

  g_assert_no_error (error);
  return dir;
}

void
market_rm_rf (const char *path)
{
  g_autoptr(GDir) d = g_dir_open (path, 0, NULL);
  const char *name;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);
      if (g_file_test (child, G_FILE_TEST_IS_DIR) && !g_file_test (child, G_FILE_TEST_IS_SYMLINK))
        market_rm_rf (child);
      else
        g_unlink (child);
    }
  g_rmdir (path);
}

/* The server dies with the test, even when an assertion aborts it. */
static void
die_with_parent (gpointer user_data)
{
  prctl (PR_SET_PDEATHSIG, SIGKILL);
}

static GPtrArray *
server_argv (MarketServer *s, const char * const *imports, const char *tokens_text,
             const char * const *extra)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);

  g_ptr_array_add (argv, g_strdup (marketd_path ()));
  g_ptr_array_add (argv, g_strdup ("--listen=127.0.0.1:0"));
  g_ptr_array_add (argv, g_strconcat ("--db=", s->db_path, NULL));
  g_ptr_array_add (argv, g_strconcat ("--blobs=", s->blobs_dir, NULL));
  g_ptr_array_add (argv, g_strconcat ("--keys=", s->keys_dir, NULL));
  for (const char * const *i = imports; i && *i; i++)
    g_ptr_array_add (argv, g_strconcat ("--import=", *i, NULL));
  if (tokens_text != NULL)
    {
      g_autofree char *tokens = g_build_filename (s->dir, "tokens", NULL);
      g_assert_true (g_file_set_contents (tokens, tokens_text, -1, NULL));
      g_ptr_array_add (argv, g_strconcat ("--tokens=", tokens, NULL));
    }
  for (const char * const *e = extra; e && *e; e++)
    g_ptr_array_add (argv, g_strdup (*e));
  g_ptr_array_add (argv, NULL);
  return argv;
}

static void
spawn_process (MarketServer *s, const char * const *imports, const char *tokens_text,
               const char * const *extra)
{
  g_autoptr(GPtrArray) argv = server_argv (s, imports, tokens_text, extra);
  g_autoptr(GSubprocessLauncher) launcher = NULL;
  g_autoptr(GError) error = NULL;

  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
  /* Under AddressSanitizer, LeakSanitizer's exit-time tracer faults in a
   * process that loaded the GnuTLS GIO module (Debian 12, GCC 12), so leak
   * checks are off for the HTTPS server only; plain servers run the same code
   * with them on.  Without sanitizers the variable means nothing. */
  for (const char * const *e = extra; e && *e; e++)
    if (g_str_has_prefix (*e, "--tls-cert"))
      g_subprocess_launcher_setenv (launcher, "LSAN_OPTIONS", "detect_leaks=0", TRUE);
  s->proc = g_subprocess_launcher_spawnv (launcher, (const char * const *) argv->pdata, &error);
  g_assert_no_error (error);
}

/* The first line of the server's stdout names its URL once it listens. */
static void
read_url (MarketServer *s)
{
  g_autoptr(GDataInputStream) out = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *line = NULL;

  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (s->proc));
  line = g_data_input_stream_read_line_utf8 (out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (line);
  g_assert_true (g_str_has_prefix (line, "listening on http://127.0.0.1:")
                 || g_str_has_prefix (line, "listening on https://127.0.0.1:"));
  g_free (s->url);
  s->url = g_strdup (line + strlen ("listening on "));
}

static void
spawn (MarketServer *s, const char * const *imports, const char *tokens_text,
       const char * const *extra)
{
  spawn_process (s, imports, tokens_text, extra);
  read_url (s);
}

GPtrArray *
market_servers_start_sharing (MarketServer *first, guint n, const char * const *imports,
                              const char *tokens_text, const char * const *extra_args)
{
  GPtrArray *servers = g_ptr_array_new ();

  /* All of them start before any is waited for: they migrate and import at once. */
  for (guint i = 0; i < n; i++)
    {
      MarketServer *s = g_new0 (MarketServer, 1);
      s->dir = market_tmpdir ();
      s->db_path = g_strdup (first->db_path);
      s->blobs_dir = g_strdup (first->blobs_dir);
      s->keys_dir = g_strdup (first->keys_dir);
      spawn_process (s, imports, tokens_text, extra_args);
      g_ptr_array_add (servers, s);
    }
  for (guint i = 0; i < n; i++)
    read_url (g_ptr_array_index (servers, i));
  return servers;
}

MarketServer *
market_server_start (const char * const *imports, const char *tokens_text)
{
  return market_server_start_with_args (imports, tokens_text, NULL);
}

static MarketServer *
start_server (const char * const *imports, const char *tokens_text,
              const char * const *extra_args, gboolean postgresql)
{
  MarketServer *s = g_new0 (MarketServer, 1);

  s->dir = market_tmpdir ();
  if (postgresql)
    s->db_path = market_pg_create_database (market_pg_shared ());
  else
    s->db_path = g_build_filename (s->dir, "market.db", NULL);
  s->blobs_dir = g_build_filename (s->dir, "blobs", NULL);
  s->keys_dir = g_build_filename (s->dir, "keys", NULL);
  spawn (s, imports, tokens_text, extra_args);
  return s;
}

MarketServer *
market_server_start_with_args (const char * const *imports, const char *tokens_text,
                               const char * const *extra_args)
{
  return start_server (imports, tokens_text, extra_args, market_use_postgresql ());
}

MarketServer *
market_server_start_on_postgresql (const char * const *imports, const char *tokens_text,
                                   const char * const *extra_args)
{
  return start_server (imports, tokens_text, extra_args, TRUE);
}

static void
terminate (MarketServer *s)
{
  g_autoptr(GError) error = NULL;

  g_subprocess_send_signal (s->proc, SIGTERM);
  g_subprocess_wait (s->proc, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_get_if_exited (s->proc));
  g_assert_cmpint (g_subprocess_get_exit_status (s->proc), ==, 0);
  g_clear_object (&s->proc);
}

void
market_server_restart (MarketServer *s, const char * const *imports)
{
  terminate (s);
  spawn (s, imports, NULL, NULL);
}

int
market_server_run_once (MarketServer *s, const char * const *imports, char **stderr_out)
{
  g_autoptr(GPtrArray) argv = server_argv (s, imports, NULL, NULL);
  g_autoptr(GSubprocess) proc = NULL;
  g_autoptr(GError) error = NULL;

  g_autoptr(GDataInputStream) out = NULL;
  g_autofree char *first_line = NULL, *rest = NULL;

  /* A run that must fail before it listens; --listen on a bad address would
   * fail too, so the failure checked is the one in stderr.  One that listens
   * after all (its imports were accepted) is stopped and reported as a
   * success, rather than left serving until the test times out. */
  proc = g_subprocess_newv ((const char * const *) argv->pdata,
                            G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                            &error);
  g_assert_no_error (error);
  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (proc));
  first_line = g_data_input_stream_read_line (out, NULL, NULL, NULL);
  if (first_line != NULL && g_str_has_prefix (first_line, "listening on "))
    {
      g_subprocess_send_signal (proc, SIGTERM);
      g_subprocess_communicate_utf8 (proc, NULL, NULL, &rest, stderr_out, &error);
      g_assert_no_error (error);
      return 0;
    }
  g_subprocess_communicate_utf8 (proc, NULL, NULL, &rest, stderr_out, &error);
  g_assert_no_error (error);
  return g_subprocess_get_if_exited (proc) ? g_subprocess_get_exit_status (proc) : -1;
}

void
market_server_stop (MarketServer *s)
{
  terminate (s);
  market_rm_rf (s->dir);
  g_free (s->dir);
  g_free (s->url);
  g_free (s->db_path);
  g_free (s->blobs_dir);
  g_free (s->keys_dir);
  g_free (s);
}

char *
market_server_blob_path (MarketServer *s, const char *sha256)
{
  char prefix[3] = { sha256[0], sha256[1], 0 };

  return g_build_filename (s->blobs_dir, prefix, sha256, NULL);
}

GThreadedSocketService *
market_start_tcp_service (GCallback run_cb, char **url_out)
{
  g_autoptr(GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) addr = g_inet_socket_address_new (lo, 0);
  g_autoptr(GSocketAddress) bound = NULL;
  g_autoptr(GError) error = NULL;
  GThreadedSocketService *service;

  service = G_THREADED_SOCKET_SERVICE (g_threaded_socket_service_new (16));
  g_socket_listener_add_address (G_SOCKET_LISTENER (service), addr, G_SOCKET_TYPE_STREAM,
                                 G_SOCKET_PROTOCOL_TCP, NULL, &bound, &error);
  g_assert_no_error (error);
  g_signal_connect (service, "run", run_cb, NULL);
  g_socket_service_start (G_SOCKET_SERVICE (service));
  *url_out = g_strdup_printf ("http://127.0.0.1:%u/",
                              g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound)));
  return service;
}

MarketServer *
market_server_start_demo_plus (const char *extra_dir)
{
  const char *imports[] = { market_demo_dir (), extra_dir, NULL };

  return market_server_start (imports, NULL);
}

void
market_assert_same_file (const char *a, const char *b)
{
  g_autofree char *x = NULL, *y = NULL;
  gsize nx = 0, ny = 0;

  g_assert_true (g_file_get_contents (a, &x, &nx, NULL));
  g_assert_true (g_file_get_contents (b, &y, &ny, NULL));
  g_assert_cmpmem (x, nx, y, ny);
}

void
market_store_result (GObject *source, GAsyncResult *result, gpointer user_data)
{
  *(GAsyncResult **) user_data = g_object_ref (result);
}

void
market_wait (GAsyncResult **result)
{
  while (*result == NULL)
    g_main_context_iteration (NULL, TRUE);
}

TsMarketPage *
market_search (TsMarketClient *client, const TsMarketSearch *search, GError **error)
{
  g_autoptr(GAsyncResult) res = NULL;

  ts_market_client_search_async (client, search, NULL, market_store_result, &res);
  market_wait (&res);
  return ts_market_client_search_finish (client, res, error);
}

TsMarketAdapter *
market_get_adapter (TsMarketClient *client, const char *id, GError **error)
{
  g_autoptr(GAsyncResult) res = NULL;

  ts_market_client_get_adapter_async (client, id, NULL, market_store_result, &res);
  market_wait (&res);
  return ts_market_client_get_adapter_finish (client, res, error);
}

void
market_pin_publisher (TsMarketClient *client, TsMarketKeyring *keyring, const char *publisher)
{
  g_autoptr(GAsyncResult) res = NULL;
  g_autoptr(GPtrArray) keys = NULL;
  g_autoptr(GError) error = NULL;

  ts_market_client_get_publisher_keys_async (client, publisher, NULL, market_store_result, &res);
  market_wait (&res);
  keys = ts_market_client_get_publisher_keys_finish (client, res, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (keys->len, >, 0);
  for (guint i = 0; i < keys->len; i++)
    {
      TsMarketPublisherKey *k = g_ptr_array_index (keys, i);
      ts_market_keyring_pin (keyring, publisher, k->key_id, k->public_key, &error);
      g_assert_no_error (error);
    }
}

void
market_write_adapter (const char *dir, const char *id, const char *publisher,
                      const char *version, gsize extra_file_bytes)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *meta = NULL, *meta_path = NULL, *cmd = NULL;
  int status = 0;

  cmd = g_strdup_printf ("%s %s 7 4 8 o_proj,out_proj", MAKE_DEMO_ADAPTER_PATH, dir);
  g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, &status, &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  meta = g_strdup_printf ("{\"id\":\"%s\",\"name\":\"Test %s\",\"description\":\"test "
                          "adapter\",\"publisher\":\"%s\",\"version\":\"%s\","
                          "\"base_model\":\"test-base\",\"license\":\"MIT\","
                          "\"price_per_1k_tokens\":1.5,\"tags\":[\"test\"]}",
                          id, id, publisher, version);
  meta_path = g_build_filename (dir, "metadata.json", NULL);
  g_assert_true (g_file_set_contents (meta_path, meta, -1, NULL));
  if (extra_file_bytes > 0)
    {
      /* Incompressible seeded bytes, so a download takes many reads. */
      g_autofree guint8 *buf = g_malloc (extra_file_bytes);
      g_autofree char *path = g_build_filename (dir, "weights-extra.bin", NULL);
      GRand *rand = g_rand_new_with_seed (g_str_hash (id));
      for (gsize i = 0; i < extra_file_bytes; i++)
        buf[i] = (guint8) g_rand_int (rand);
      g_rand_free (rand);
      g_assert_true (g_file_set_contents (path, (char *) buf, extra_file_bytes, NULL));
    }
}

static int
compare_doubles (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

GArray *
market_lora_kept_fractions (const char *model_path, const char *adapter, guint rank,
                            guint *max_rank_out)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (double));
  LmModel *model = NULL;
  LmLora *lora = NULL;
  guint max_rank = 0;

  g_assert_cmpint (lm_model_load (model_path, &model, NULL), ==, LM_OK);
  g_assert_cmpint (lm_lora_load (model, adapter, 1.0f, &lora, NULL), ==, LM_OK);
  for (gsize i = 0; i < lm_lora_n_modules (lora); i++)
    {
      const LmLoraModule *m = lm_lora_module (lora, i);
      g_autofree double *sigma = g_new0 (double, m->rank);
      double kept = 0.0, total = 0.0, frac;

      g_assert_cmpint (lm_lora_singular_values (m->rank, m->d_in, m->d_out, m->a, m->b,
                                                m->scale, sigma), ==, LM_OK);
      for (guint k = 0; k < m->rank; k++)
        {
          total += sigma[k] * sigma[k];
          kept += k < rank ? sigma[k] * sigma[k] : 0.0;
        }
      frac = kept / total;
      g_array_append_val (out, frac);
      max_rank = MAX (max_rank, m->rank);
    }
  g_array_sort (out, compare_doubles);
  if (max_rank_out != NULL)
    *max_rank_out = max_rank;
  lm_lora_free (lora);
  lm_model_free (model);
  return out;
}
