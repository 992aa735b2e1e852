/* test-he-server-binary.c: the tensafe-he-server executable: startup line, health, SIGTERM.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

#include "hostile-common.h"
#include "server-fixture.h"
#include "ts-helora-remote.h"
#include "ts-test-util.h"

#define GOLDEN "qwen35/tiny-qwen35moe-f32/"
#define GGUF_LORA GOLDEN "lora/tiny-qwen35moe-lora-f32.gguf"
#define PEFT_LORA GOLDEN "lora/peft"

typedef struct {
  GSubprocess *process;
  char *url;
  char *dir;
  char *adapter;
  char *peft_dir;
} Server;

/* Copies tests/data/@relative into @dir under @name. */
static char *
copy_data (const char *dir, const char *relative, const char *name)
{
  gsize len;
  g_autofree guint8 *data = ts_test_read_data (relative, &len);
  char *path = g_build_filename (dir, name, NULL);

  g_assert_true (g_file_set_contents (path, (const char *) data, len, NULL));
  return path;
}

static void
server_start (Server *s, const char *const *extra)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GDataInputStream) out = NULL;
  g_autoptr (GSubprocessLauncher) launcher = NULL;
  g_autofree char *line = NULL;

  s->dir = g_dir_make_tmp ("he-server-bin-XXXXXX", &error);
  g_assert_no_error (error);
  s->adapter = copy_data (s->dir, GOLDEN "lora/tiny-qwen35moe-lora-f32.gguf",
                          "tiny-qwen35moe-lora-f32.gguf");
  s->peft_dir = g_build_filename (s->dir, "peft", NULL);
  g_mkdir (s->peft_dir, 0700);
  g_free (copy_data (s->peft_dir, GOLDEN "lora/peft/adapter_config.json", "adapter_config.json"));
  g_free (copy_data (s->peft_dir, GOLDEN "lora/peft/adapter_model.safetensors",
                     "adapter_model.safetensors"));
  g_ptr_array_add (argv, (gpointer) HE_SERVER_PATH);
  g_ptr_array_add (argv, (gpointer) "--listen");
  g_ptr_array_add (argv, (gpointer) "127.0.0.1:0");
  g_ptr_array_add (argv, (gpointer) "--adapters");
  g_ptr_array_add (argv, s->dir);
  for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) extra[i]);
  g_ptr_array_add (argv, NULL);
  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  /* Under AddressSanitizer, LeakSanitizer's exit-time tracer faults in a
   * process that loaded the GnuTLS GIO module (Debian 12, GCC 12): leak
   * checks are off for the HTTPS server only. Without sanitizers the
   * variable means nothing. */
  for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
    if (strcmp (extra[i], "--tls-cert") == 0)
      g_subprocess_launcher_setenv (launcher, "LSAN_OPTIONS", "detect_leaks=0", TRUE);
  s->process = g_subprocess_launcher_spawnv (launcher, (const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (s->process));
  line = g_data_input_stream_read_line_utf8 (out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (line);
  g_assert_true (g_str_has_prefix (line, "listening on http://127.0.0.1:")
                 || g_str_has_prefix (line, "listening on https://127.0.0.1:"));
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
  if (s->adapter != NULL)
    g_unlink (s->adapter);
  g_free (s->adapter);
  if (s->peft_dir != NULL)
    {
      g_autofree char *config = g_build_filename (s->peft_dir, "adapter_config.json", NULL);
      g_autofree char *weights = g_build_filename (s->peft_dir, "adapter_model.safetensors", NULL);
      g_unlink (config);
      g_unlink (weights);
      g_rmdir (s->peft_dir);
      g_free (s->peft_dir);
    }
  g_rmdir (s->dir);
  g_free (s->dir);
  g_free (s->url);
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
  for (int i = 0; i < 1000 && !ts_helora_remote_is_closed (remote); i++)
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

/* tensafe-cli generate --he MODE [EXTRA…]: the generated ids, one line;
 * stderr (the HE summary) into @err_out when non-NULL. */
static char *
generate_ids_with (const char *mode, const char *adapter, const char *const *extra,
                   char **err_out)
{
  g_autofree char *model = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  g_autofree char *lora = ts_test_data_path (adapter);
  gsize len;
  g_autofree gint32 *prompt = (gint32 *) ts_test_read_data (GOLDEN "prompt_tokens.bin", &len);
  g_autoptr (GString) tokens = g_string_new (NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = NULL;
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  char *out = NULL, *err = NULL;
  const char *fixed[] = { g_getenv ("TENSAFE_CLI"), "generate", "--model", model, "--lora", lora,
                          "--tokens", NULL, "-n", "32", "--print-ids", "--threads", "1",
                          "--he", mode };

  for (gsize i = 0; i < len / 4; i++)
    g_string_append_printf (tokens, "%s%d", i ? "," : "", prompt[i]);
  fixed[7] = tokens->str;
  for (guint i = 0; i < G_N_ELEMENTS (fixed); i++)
    g_ptr_array_add (argv, (gpointer) fixed[i]);
  for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) extra[i]);
  g_ptr_array_add (argv, NULL);
  p = g_subprocess_newv ((const char *const *) argv->pdata,
                         G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_communicate_utf8 (p, NULL, NULL, &out, &err, &error));
  g_assert_no_error (error);
  g_test_message ("--he %s: %s", mode, err);
  g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 0);
  if (err_out != NULL)
    *err_out = err;
  else
    g_free (err);
  return g_strstrip (out);
}

static char *
generate_ids (const char *mode, const char *adapter)
{
  return generate_ids_with (mode, adapter, NULL, NULL);
}

/* The same greedy tokens with the adapter in plaintext, evaluated in-process
 * under CKKS, and evaluated by the real server on an ephemeral port; all
 * equal to the golden LoRA tokens of an independent implementation. */
static void
test_generate_remote (void)
{
  Server s = { 0 };
  g_autofree char *plain = generate_ids ("plain", GGUF_LORA);
  g_autofree char *local = generate_ids ("local", GGUF_LORA);
  g_autofree char *remote = NULL;
  g_autofree char *ws = NULL;
  gsize len;
  g_autofree gint32 *golden = (gint32 *) ts_test_read_data (GOLDEN "lora_greedy_tokens.bin", &len);
  g_autoptr (GString) expected = g_string_new (NULL);

  for (gsize i = 0; i < len / 4; i++)
    g_string_append_printf (expected, "%s%d", i ? " " : "", golden[i]);
  server_start (&s, NULL);
  ws = g_strdup_printf ("ws%s", s.url + 4);
  remote = generate_ids (ws, GGUF_LORA);
  server_stop (&s, 0);
  g_assert_cmpstr (plain, ==, expected->str);
  g_assert_cmpstr (local, ==, plain);
  g_assert_cmpstr (remote, ==, plain);
}

/* Given the base model, the server also serves PEFT folders. */
static void
test_generate_remote_peft (void)
{
  g_autofree char *model = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  const char *extra[] = { "--model", model, NULL };
  Server s = { 0 };
  g_autofree char *plain = generate_ids ("plain", PEFT_LORA);
  g_autofree char *remote = NULL;
  g_autofree char *ws = NULL;

  server_start (&s, extra);
  ws = g_strdup_printf ("ws%s", s.url + 4);
  remote = generate_ids (ws, PEFT_LORA);
  server_stop (&s, 0);
  g_assert_cmpstr (remote, ==, plain);
}

/* --lora GGUF --add-lora PEFT@W: the server (given the base model) stacks
 * the same two files; every mode gives the same tokens. */
static void
test_generate_remote_stacked (void)
{
  g_autofree char *model = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  g_autofree char *peft = ts_test_data_path (PEFT_LORA);
  g_autofree char *added = g_strconcat (peft, "@-0.75", NULL);
  const char *extra[] = { "--model", model, NULL };
  const char *stack[] = { "--add-lora", added, "--he-params", "fast", NULL };
  Server s = { 0 };
  g_autofree char *plain = generate_ids_with ("plain", GGUF_LORA, stack, NULL);
  g_autofree char *golden = generate_ids ("plain", GGUF_LORA);
  g_autofree char *local = generate_ids_with ("local", GGUF_LORA, stack, NULL);
  g_autofree char *remote = NULL, *err = NULL;
  g_autofree char *ws = NULL;

  server_start (&s, extra);
  ws = g_strdup_printf ("ws%s", s.url + 4);
  remote = generate_ids_with (ws, GGUF_LORA, stack, &err);
  server_stop (&s, 0);
  g_assert_cmpstr (plain, !=, golden);       /* the weight -0.75 matters */
  g_assert_cmpstr (local, ==, plain);
  g_assert_cmpstr (remote, ==, plain);
  g_assert_nonnull (strstr (err, "he remote"));
}

/* tensafe-cli bench helora ARGS…: exit status, stdout and stderr. */
static int
run_bench (const char *const *args, char **out, char **err)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();

  g_ptr_array_add (argv, (gpointer) g_getenv ("TENSAFE_CLI"));
  g_ptr_array_add (argv, (gpointer) "bench");
  g_ptr_array_add (argv, (gpointer) "helora");
  for (guint i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  return ts_test_spawn ((const char *const *) argv->pdata, out, err);
}

static void
post_reload (Server *s, const char *id)
{
  g_autoptr (SoupSession) session = soup_session_new ();
  g_autofree char *url = g_strdup_printf ("%sadmin/adapters/%s/reload", s->url, id);
  g_autoptr (SoupMessage) msg = soup_message_new ("POST", url);
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) body = soup_session_send_and_read (session, msg, NULL, &error);

  g_assert_no_error (error);
  g_assert_cmpuint (soup_message_get_status (msg), ==, SOUP_STATUS_OK);
}

/* bench helora --remote --stack: the first run writes the random members
 * next to --lora and says the server must load them; once it has, the
 * remote stack shares each h's encryption like the local one. */
static void
test_bench_remote_stack (void)
{
  g_autofree char *model = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  const char *extra[] = { "--model", model, NULL };
  Server s = { 0 };
  g_autofree char *ws = NULL, *out = NULL, *err = NULL;
  g_autofree char *attn = NULL, *ffn = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  JsonArray *modes;

  server_start (&s, extra);
  ws = g_strdup_printf ("ws%s", s.url + 4);
  attn = g_build_filename (s.dir, "stack-attn-r16.gguf", NULL);
  ffn = g_build_filename (s.dir, "stack-ffn-r16.gguf", NULL);
  {
    const char *args[] = { "--model", model, "--lora", s.adapter, "--stack", "--remote", ws,
                           "--he-params", "fast", "-n", "3", "--prompt-tokens", "3",
                           "--threads", "1", "--json", NULL };
    g_assert_cmpint (run_bench (args, &out, &err), ==, 1);
    g_assert_nonnull (strstr (err, "Wrote the stack's random adapters"));
    g_assert_true (g_file_test (attn, G_FILE_TEST_IS_REGULAR));
    g_assert_true (g_file_test (ffn, G_FILE_TEST_IS_REGULAR));
    post_reload (&s, "stack-attn-r16");
    post_reload (&s, "stack-ffn-r16");
    g_clear_pointer (&out, g_free);
    g_clear_pointer (&err, g_free);
    g_assert_cmpint (run_bench (args, &out, &err), ==, 0);
  }
  g_unlink (attn);
  g_unlink (ffn);
  server_stop (&s, 0);
  g_assert_true (json_parser_load_from_data (parser, out, -1, &error));
  g_assert_no_error (error);
  modes = json_node_get_array (json_parser_get_root (parser));
  g_assert_cmpuint (json_array_get_length (modes), ==, 3);
  for (guint i = 1; i < 3; i++)
    {
      JsonObject *mode = json_array_get_object_element (modes, i);
      g_assert_cmpstr (json_object_get_string_member (mode, "mode"), ==, i == 1 ? "local" : "remote");
      g_assert_cmpint (json_object_get_int_member (mode, "modules"), ==, 15);
      g_assert_cmpint (json_object_get_int_member (mode, "distinct_inputs"), ==, 9);
      g_assert_cmpfloat (json_object_get_double_member (mode, "encryptions_per_token"), ==, 9.0);
      g_assert_cmpfloat (json_object_get_double_member (mode, "max_abs_delta_error"), <, 1e-6);
    }
}

/* bench helora --remote --private: one more row, remote-private, at the
 * default lambda_s and close to the plain result; a lambda_s under the
 * server's floor fails with its reason. */
static void
test_bench_private (void)
{
  g_autofree char *model = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  g_autofree char *ws = NULL, *out = NULL, *err = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  Server s = { 0 };
  JsonArray *modes;
  JsonObject *private;

  server_start (&s, NULL);
  ws = g_strdup_printf ("ws%s", s.url + 4);
  {
    const char *args[] = { "--model", model, "--lora", s.adapter, "--remote", ws, "--private",
                           "--he-params", "fast", "-n", "3", "--prompt-tokens", "3",
                           "--threads", "1", "--json", NULL };
    g_assert_cmpint (run_bench (args, &out, &err), ==, 0);
  }
  g_assert_true (json_parser_load_from_data (parser, out, -1, &error));
  g_assert_no_error (error);
  modes = json_node_get_array (json_parser_get_root (parser));
  g_assert_cmpuint (json_array_get_length (modes), ==, 4);
  private = json_array_get_object_element (modes, 3);
  g_assert_cmpstr (json_object_get_string_member (private, "mode"), ==, "remote-private");
  g_assert_cmpint (json_object_get_int_member (private, "bytes_up"), >, 0);
  g_assert_cmpfloat (json_object_get_double_member (private, "max_abs_delta_error"), >, 0);
  g_assert_cmpfloat (json_object_get_double_member (private, "max_abs_delta_error"), <, 1e-2);
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  {
    const char *args[] = { "--model", model, "--lora", s.adapter, "--remote", ws, "--private",
                           "--he-lambda", "8", "--he-params", "fast", "-n", "1",
                           "--threads", "1", NULL };
    g_assert_cmpint (run_bench (args, &out, &err), ==, 1);
    g_assert_true (g_str_has_prefix (err, "tensafe-cli bench helora: "));
  }
  server_stop (&s, 0);
}

/* bench helora --private-warm --rounds 2: per round plain, local, remote,
 * remote-private-warm (no pad made inline) and remote-private; the table's
 * summary compares them. A pool smaller than -n is refused, naming the
 * server option to change. */
static void
test_bench_private_warm (void)
{
  g_autofree char *model = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  g_autofree char *ws = NULL, *out = NULL, *err = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  const char *extra[] = { "--pad-pool-answers", "3", NULL };
  const char *const order[] = { "plain", "local", "remote", "remote-private-warm",
                                "remote-private" };
  Server s = { 0 };
  JsonArray *modes;

  server_start (&s, extra);
  ws = g_strdup_printf ("ws%s", s.url + 4);
  {
    const char *args[] = { "--model", model, "--lora", s.adapter, "--remote", ws,
                           "--private-warm", "--rounds", "2", "--he-params", "fast", "-n", "3",
                           "--prompt-tokens", "3", "--threads", "1", "--json", NULL };
    g_assert_cmpint (run_bench (args, &out, &err), ==, 0);
  }
  g_assert_true (json_parser_load_from_data (parser, out, -1, &error));
  g_assert_no_error (error);
  modes = json_node_get_array (json_parser_get_root (parser));
  g_assert_cmpuint (json_array_get_length (modes), ==, 10);
  for (guint i = 0; i < 10; i++)
    {
      JsonObject *mode = json_array_get_object_element (modes, i);
      JsonObject *pads = json_object_get_object_member (mode, "pads");
      const char *name = json_object_get_string_member (mode, "mode");

      g_assert_cmpint (json_object_get_int_member (mode, "round"), ==, i / 5);
      g_assert_cmpstr (name, ==, order[i % 5]);
      g_assert_true ((pads != NULL) == g_str_has_prefix (name, "remote-private"));
      if (g_str_equal (name, "remote-private-warm"))
        {
          g_assert_cmpint (json_object_get_int_member (pads, "made_inline"), ==, 0);
          g_assert_cmpint (json_object_get_int_member (pads, "from_pool"), >=, 3 * 4);
          g_assert_cmpfloat (json_object_get_double_member (pads, "cpu_ms_per_module"), >, 0);
        }
    }
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  {
    const char *args[] = { "--model", model, "--lora", s.adapter, "--remote", ws,
                           "--private-warm", "--he-params", "fast", "-n", "3", "--prompt-tokens",
                           "3", "--threads", "1", NULL };
    g_auto (GStrv) lines = NULL;

    g_assert_cmpint (run_bench (args, &out, &err), ==, 0);
    lines = g_strsplit (out, "\n", -1);
    /* header, 5 rows, 4 lines of encryptions, 2 of legend, "", the summary's header, its rows */
    g_assert_cmpuint (g_strv_length (lines), >, 18);
    g_assert_true (g_str_has_prefix (lines[13], "mode                rounds      tok/s HE ms/module  vs remote"));
    g_assert_true (g_str_has_prefix (lines[17], "remote-private-warm      1 "));
  }
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  {
    const char *args[] = { "--model", model, "--lora", s.adapter, "--remote", ws,
                           "--private-warm", "--he-params", "fast", "-n", "4", "--prompt-tokens",
                           "3", "--threads", "1", NULL };
    g_assert_cmpint (run_bench (args, &out, &err), ==, 1);
    g_assert_true (g_str_has_prefix (err, "tensafe-cli bench helora: "));
    g_assert_nonnull (strstr (err, "--pad-pool-answers 4 or more"));
  }
  server_stop (&s, 0);
}

static gboolean
accept_certificate_cb (SoupMessage *msg, GTlsCertificate *cert, GTlsCertificateFlags errors,
                       gpointer data)
{
  return TRUE;                   /* our own self-signed test certificate */
}

/* A self-signed certificate for 127.0.0.1 (also its own CA) and its key. */
static gboolean
make_certificate (const char *cert, const char *key)
{
  g_autoptr (GSubprocess) openssl = g_subprocess_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE
                                                      | G_SUBPROCESS_FLAGS_STDERR_SILENCE, NULL,
                                                      "openssl", "req", "-x509", "-newkey", "rsa:2048",
                                                      "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                                                      "-addext", "subjectAltName=IP:127.0.0.1",
                                                      "-keyout", key, "-out", cert, NULL);

  return openssl != NULL && g_subprocess_wait_check (openssl, NULL, NULL);
}

/* With a certificate and key the server speaks HTTPS (and so wss://). */
static void
test_tls (void)
{
  g_autofree char *dir = g_dir_make_tmp ("he-server-tls-XXXXXX", NULL);
  g_autofree char *cert = g_build_filename (dir, "cert.pem", NULL);
  g_autofree char *key = g_build_filename (dir, "key.pem", NULL);
  const char *extra[] = { "--tls-cert", cert, "--tls-key", key, NULL };
  g_autoptr (GError) error = NULL;
  g_autoptr (SoupSession) session = soup_session_new ();
  g_autoptr (SoupMessage) msg = NULL;
  g_autoptr (GBytes) body = NULL;
  g_autofree char *url = NULL;
  Server s = { 0 };

  if (!make_certificate (cert, key))
    {
      g_test_skip ("openssl cannot make a test certificate");
      return;
    }
  server_start (&s, extra);
  g_assert_true (g_str_has_prefix (s.url, "https://"));
  url = g_strconcat (s.url, "healthz", NULL);
  msg = soup_message_new ("GET", url);
  g_signal_connect (msg, "accept-certificate", G_CALLBACK (accept_certificate_cb), NULL);
  body = soup_session_send_and_read (session, msg, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (soup_message_get_status (msg), ==, SOUP_STATUS_OK);
  server_stop (&s, 0);
  g_unlink (cert);
  g_unlink (key);
  g_rmdir (dir);
}

/* wss:// to a self-signed server: refused by default, trusted with its
 * certificate as the CA file (API and tensafe-cli --he-ca), and the CLI's
 * public-key encryption gives the golden tokens over it. */
static void
test_tls_trusted_ca (void)
{
  g_autofree char *dir = g_dir_make_tmp ("he-server-ca-XXXXXX", NULL);
  g_autofree char *cert = g_build_filename (dir, "cert.pem", NULL);
  g_autofree char *key = g_build_filename (dir, "key.pem", NULL);
  g_autofree char *missing = g_build_filename (dir, "missing.pem", NULL);
  const char *extra[] = { "--tls-cert", cert, "--tls-key", key, NULL };
  const char *trust[] = { "--he-ca", cert, "--he-encrypt", "pk", NULL };
  g_autoptr (GError) error = NULL;
  g_autofree char *wss = NULL, *plain = NULL, *remote = NULL, *err = NULL;
  TsHeloraRemote *r;
  Server s = { 0 };

  if (!make_certificate (cert, key))
    {
      g_test_skip ("openssl cannot make a test certificate");
      return;
    }
  server_start (&s, extra);
  wss = g_strdup_printf ("wss%s", s.url + 5);
  r = ts_helora_remote_connect (wss, 5000, &error);
  g_assert_null (r);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED);
  g_clear_error (&error);
  r = ts_helora_remote_connect_with_ca (wss, 5000, missing, &error);
  g_assert_null (r);
  g_assert_nonnull (error);
  g_clear_error (&error);
  r = ts_helora_remote_connect_with_ca (wss, 5000, cert, &error);
  g_assert_no_error (error);
  g_assert_false (ts_helora_remote_is_closed (r));
  ts_helora_remote_free (r);
  plain = generate_ids ("plain", GGUF_LORA);
  remote = generate_ids_with (wss, GGUF_LORA, trust, &err);
  server_stop (&s, 0);
  g_assert_cmpstr (remote, ==, plain);
  g_assert_nonnull (strstr (err, "public-key encryption"));
  g_unlink (cert);
  g_unlink (key);
  g_rmdir (dir);
}

/* The server holds no key: no secret-key function is linked into it. */
static void
test_links_no_secret_key_code (void)
{
  const char *argv[] = { "nm", HE_SERVER_PATH, NULL };
  const char *forbidden[] = { "ckks_secret_key_new", "ckks_secret_key_unseal", "ckks_encrypt_sk",
                              "ckks_decrypt", "ckks_helora_encrypt_sk", "ckks_helora_decrypt" };
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE
                                                       | G_SUBPROCESS_FLAGS_STDERR_SILENCE, &error);
  g_autofree char *out = NULL;
  g_auto (GStrv) lines = NULL;

  if (p == NULL)
    {
      g_test_skip ("nm is not installed");
      return;
    }
  g_assert_true (g_subprocess_communicate_utf8 (p, NULL, NULL, &out, NULL, &error));
  g_assert_no_error (error);
  lines = g_strsplit (out, "\n", -1);
  /* The evaluation code is there, so the symbol table is readable. */
  g_assert_nonnull (strstr (out, " ckks_helora_evaluate\n"));
  for (guint i = 0; lines[i] != NULL; i++)
    for (guint k = 0; k < G_N_ELEMENTS (forbidden); k++)
      {
        const char *name = strrchr (lines[i], ' ');
        g_assert_false (name != NULL && g_str_equal (name + 1, forbidden[k]));
      }
}

/* The server's resident memory, from /proc/PID/status, in KiB. */
static gint64
server_rss_kib (Server *s)
{
  g_autofree char *path = g_strdup_printf ("/proc/%s/status",
                                           g_subprocess_get_identifier (s->process));
  g_autofree char *text = NULL;
  const char *line;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  line = strstr (text, "VmRSS:");
  g_assert_nonnull (line);
  return g_ascii_strtoll (line + 6, NULL, 10);
}

/* A raw TCP connection to the server's port, upgraded to WebSocket by hand
 * (no library that would read the answers), with a small receive buffer. */
static int
connect_websocket_raw (const char *url)
{
  const char *colon = strrchr (url, ':');
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK),
                            .sin_port = htons ((guint16) atoi (colon + 1)) };
  struct timeval timeout = { .tv_sec = 10 };
  int fd = socket (AF_INET, SOCK_STREAM, 0), small = 4096;
  char reply[1024] = "";
  gsize got = 0;

  setsockopt (fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &to, sizeof to), ==, 0);
  g_autofree char *request = g_strdup_printf (
    "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    TS_HELORA_PATH, atoi (colon + 1));
  g_assert_cmpint (send (fd, request, strlen (request), MSG_NOSIGNAL), ==, (gssize) strlen (request));
  while (got < sizeof reply - 1 && strstr (reply, "\r\n\r\n") == NULL)
    {
      gssize n = recv (fd, reply + got, 1, 0);   /* byte by byte: read no frame */
      g_assert_cmpint (n, ==, 1);
      got++;
    }
  g_assert_true (g_str_has_prefix (reply, "HTTP/1.1 101"));
  return fd;
}

/* Sends up to @max masked binary frames of 8 bytes that are no protocol
 * frame (each answered with an error frame) and reads nothing; returns how
 * many went out before the server closed the connection (-1: it never
 * did), the largest server RSS seen into @peak_kib. */
static gint64
flood_without_reading (Server *s, int fd, gint64 max, gint64 *peak_kib)
{
  enum { BATCH = 1000, FRAME = 2 + 4 + 8 };
  static guint8 batch[BATCH * FRAME];

  for (int i = 0; i < BATCH; i++)
    {
      guint8 *f = batch + i * FRAME;
      f[0] = 0x82;                 /* FIN, binary */
      f[1] = 0x80 | 8;             /* masked, 8 bytes */
      memcpy (f + 2, "\x11\x22\x33\x44", 4);
      memset (f + 6, 0x5a, 8);
    }
  *peak_kib = 0;
  for (gint64 sent = 0; sent < max; sent += BATCH)
    {
      if (send (fd, batch, sizeof batch, MSG_NOSIGNAL) != (gssize) sizeof batch)
        return sent;
      if (sent % (50 * BATCH) == 0)
        *peak_kib = MAX (*peak_kib, server_rss_kib (s));
    }
  return -1;
}

/* A client that sends and never reads its answers is closed once 1 MiB of
 * them waits in the server (--max-unread-kib 1024), the server's memory
 * stays bounded meanwhile, and the server goes on serving. */
static void
test_client_that_never_reads (void)
{
  const char *extra[] = { "--max-unread-kib", "1024", NULL };
  Server s = { 0 };
  gint64 peak_kib = 0, base_kib;
  g_autofree char *health = NULL, *metrics = NULL;
  int fd;

  server_start (&s, extra);
  health = http_get (s.url, "healthz");
  base_kib = server_rss_kib (&s);
  fd = connect_websocket_raw (s.url);
  gint64 sent = flood_without_reading (&s, fd, 400000, &peak_kib);
  close (fd);
  g_test_message ("closed after %" G_GINT64_FORMAT " frames; server RSS %" G_GINT64_FORMAT
                  " KiB at start, at most %" G_GINT64_FORMAT " KiB seen", sent, base_kib, peak_kib);
  g_assert_cmpint (sent, >, 0);
  g_assert_cmpint (peak_kib - base_kib, <, 48 * 1024);
  for (int i = 0; i < 1000; i++)
    {
      g_free (metrics);
      metrics = http_get (s.url, "metrics");
      if (strstr (metrics, "tensafe_he_connected_clients 0\n") != NULL)
        break;
      g_usleep (10000);
    }
  g_assert_nonnull (strstr (metrics, "tensafe_he_unread_closes_total 1\n"));
  g_assert_nonnull (strstr (metrics, "tensafe_he_connected_clients 0\n"));
  g_free (health);
  health = http_get (s.url, "healthz");
  g_assert_cmpstr (health, ==, "ok\n");
  server_stop (&s, 0);
}

/* A raw TCP connection to the server's port. */
static int
connect_raw (const char *url)
{
  const char *colon = strrchr (url, ':');
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK),
                            .sin_port = htons ((guint16) atoi (colon + 1)) };
  int fd = socket (AF_INET, SOCK_STREAM, 0);

  g_assert_cmpint (connect (fd, (struct sockaddr *) &to, sizeof to), ==, 0);
  return fd;
}

/* Whether the server has closed @fd (EOF or reset, nothing else to read). */
static gboolean
closed_by_server (int fd)
{
  char byte;
  gssize n = recv (fd, &byte, 1, MSG_DONTWAIT);

  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Slowloris: one header line every 250 ms never finishes the headers. The
 * request deadline (the idle timeout, 1 s here) drops the connection; a
 * socket timeout alone would not, since the line keeps it busy. */
static void
test_slow_headers_dropped (void)
{
  const char *extra[] = { "--idle-timeout", "1", NULL };
  Server s = { 0 };
  g_autofree char *health = NULL;
  gint64 start;
  gboolean closed = FALSE;
  int fd;

  server_start (&s, extra);
  fd = connect_raw (s.url);
  start = g_get_monotonic_time ();
  g_assert_cmpint (send (fd, "GET /healthz HTTP/1.1\r\n", 23, MSG_NOSIGNAL), ==, 23);
  for (int i = 0; i < 20 && !closed; i++)
    {
      g_autofree char *line = g_strdup_printf ("X-Slow-%d: 1\r\n", i);
      g_usleep (250000);
      closed = closed_by_server (fd)
               || send (fd, line, strlen (line), MSG_NOSIGNAL) != (gssize) strlen (line);
    }
  g_test_message ("closed: %d after %.1f s", closed,
                  (g_get_monotonic_time () - start) / (double) G_USEC_PER_SEC);
  close (fd);
  g_assert_true (closed);
  g_assert_cmpint (g_get_monotonic_time () - start, <, 3 * G_USEC_PER_SEC);
  health = http_get (s.url, "healthz");
  g_assert_cmpstr (health, ==, "ok\n");
  server_stop (&s, 0);
}

/* ---- hostile frames and dropped connections (the hostile suite) ---- */

/* Sends one WebSocket frame: @first is FIN|opcode, @len as declared (may
 * exceed what follows), @payload masked when @masked. */
static void
send_frame (int fd, guint8 first, guint64 declared, const guint8 *payload, gsize len,
            gboolean masked)
{
  g_autoptr (GByteArray) f = g_byte_array_new ();
  static const guint8 key[4] = { 0x37, 0xfa, 0x21, 0x3d };
  guint8 head[2] = { first, masked ? 0x80 : 0 };

  if (declared < 126)
    head[1] |= (guint8) declared;
  else if (declared <= G_MAXUINT16)
    head[1] |= 126;
  else
    head[1] |= 127;
  g_byte_array_append (f, head, 2);
  if ((head[1] & 0x7f) == 126)
    {
      guint8 ext[2] = { (guint8) (declared >> 8), (guint8) declared };
      g_byte_array_append (f, ext, 2);
    }
  else if ((head[1] & 0x7f) == 127)
    for (int shift = 56; shift >= 0; shift -= 8)
      {
        guint8 b = (guint8) (declared >> shift);
        g_byte_array_append (f, &b, 1);
      }
  if (masked)
    g_byte_array_append (f, key, 4);
  for (gsize i = 0; i < len; i++)
    {
      guint8 b = masked ? payload[i] ^ key[i % 4] : payload[i];
      g_byte_array_append (f, &b, 1);
    }
  send (fd, f->data, f->len, MSG_NOSIGNAL);
}

/* Waits up to 3 s for the server to answer @fd (an error or close frame)
 * or close it; FALSE when it stays silent. */
static gboolean
server_reacts (int fd)
{
  struct timeval three = { .tv_sec = 3 };
  char buf[256];

  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &three, sizeof three);
  gssize n = recv (fd, buf, sizeof buf, 0);
  return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Frames a WebSocket peer must refuse, and frames of random bytes the
 * protocol must refuse: each one answered or closed, the server healthy
 * after all of them, its memory bounded. */
static void
test_hostile_frames (void)
{
  static const guint8 bad_utf8[] = { 0xc3, 0x28, 0xff };
  static const guint8 big_ping[126] = { 0 };
  static const guint8 short_close[1] = { 3 };
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  Server s = { 0 };
  g_autofree char *health = NULL;
  gint64 base_kib;

  server_start (&s, NULL);
  base_kib = server_rss_kib (&s);
  for (guint i = 0; i < hostile_count (40); i++)
    {
      int fd = connect_websocket_raw (s.url);
      guint8 payload[200];
      gsize len = (gsize) g_rand_int_range (rng, 0, sizeof payload + 1);

      switch (i % 8)
        {
        case 0: send_frame (fd, 0x82, G_MAXINT64, NULL, 0, TRUE); break;      /* 2^63 bytes */
        case 1: send_frame (fd, 0x82, 4, (const guint8 *) "abcd", 4, FALSE); break; /* unmasked */
        case 2: send_frame (fd, 0x83, 4, (const guint8 *) "abcd", 4, TRUE); break;  /* opcode 3 */
        case 3: send_frame (fd, 0x89, sizeof big_ping, big_ping, sizeof big_ping, TRUE); break;
        case 4: send_frame (fd, 0x81, sizeof bad_utf8, bad_utf8, sizeof bad_utf8, TRUE); break;
        case 5: send_frame (fd, 0x88, 1, short_close, 1, TRUE); break;
        default:                                                 /* random bytes as a request */
          for (gsize b = 0; b < len; b++)
            payload[b] = (guint8) g_rand_int_range (rng, 0, 256);
          send_frame (fd, 0x82, len, payload, len, TRUE);
        }
      if (!server_reacts (fd))
        g_error ("hostile frame %u (kind %u, seed %" G_GUINT64_FORMAT "): no answer, no close",
                 i, i % 8, ts_test_seed ());
      close (fd);
    }
  health = http_get (s.url, "healthz");
  g_assert_cmpstr (health, ==, "ok\n");
  g_test_message ("server RSS %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT " KiB", base_kib,
                  server_rss_kib (&s));
  g_assert_cmpint (server_rss_kib (&s) - base_kib, <, 32 * 1024);
  server_stop (&s, 0);
}

/* Connections dropped mid-upgrade, mid-frame and right after the upgrade:
 * nothing is left connected, the server answers, its memory comes back. */
static void
test_dropped_connections (void)
{
  static const char half_upgrade[] = "GET " TS_HELORA_PATH " HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n";
  Server s = { 0 };
  g_autofree char *health = NULL, *metrics = NULL;
  gint64 base_kib;

  server_start (&s, NULL);
  base_kib = server_rss_kib (&s);
  for (guint i = 0; i < hostile_count (150); i++)
    {
      int fd;

      if (i % 3 == 0)
        {
          fd = connect_raw (s.url);
          send (fd, half_upgrade, sizeof half_upgrade - 1, MSG_NOSIGNAL);
        }
      else
        {
          fd = connect_websocket_raw (s.url);
          if (i % 3 == 1)
            send_frame (fd, 0x82, 1000, (const guint8 *) "only a part", 11, TRUE);
        }
      close (fd);
    }
  for (int i = 0; i < 500; i++)
    {
      g_free (metrics);
      metrics = http_get (s.url, "metrics");
      if (strstr (metrics, "tensafe_he_connected_clients 0\n") != NULL)
        break;
      g_usleep (10000);
    }
  g_assert_nonnull (strstr (metrics, "tensafe_he_connected_clients 0\n"));
  health = http_get (s.url, "healthz");
  g_assert_cmpstr (health, ==, "ok\n");
  g_test_message ("%u dropped connections; server RSS %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT
                  " KiB", hostile_count (150), base_kib, server_rss_kib (&s));
  g_assert_cmpint (server_rss_kib (&s) - base_kib, <, 32 * 1024);
  server_stop (&s, 0);
}

int
main (int argc, char **argv)
{
  hostile_scale_from_args (&argc, argv);
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/he-server-binary/health-and-sigterm", test_health_and_sigterm);
  g_test_add_func ("/he-server-binary/bad-options", test_bad_options);
  g_test_add_func ("/he-server-binary/client-that-never-reads", test_client_that_never_reads);
  g_test_add_func ("/he-server-binary/slow-headers-dropped", test_slow_headers_dropped);
  g_test_add_func ("/he-server-binary/hostile-frames", test_hostile_frames);
  g_test_add_func ("/he-server-binary/dropped-connections", test_dropped_connections);
  g_test_add_func ("/he-server-binary/tls", test_tls);
  g_test_add_func ("/he-server-binary/tls-trusted-ca", test_tls_trusted_ca);
  g_test_add_func ("/he-server-binary/generate-remote", test_generate_remote);
  g_test_add_func ("/he-server-binary/generate-remote-peft", test_generate_remote_peft);
  g_test_add_func ("/he-server-binary/generate-remote-stacked", test_generate_remote_stacked);
  g_test_add_func ("/he-server-binary/bench-remote-stack", test_bench_remote_stack);
  g_test_add_func ("/he-server-binary/bench-private", test_bench_private);
  g_test_add_func ("/he-server-binary/bench-private-warm", test_bench_private_warm);
  g_test_add_func ("/he-server-binary/links-no-secret-key-code", test_links_no_secret_key_code);
  return g_test_run ();
}
