/* test-he-reconnect.c: a remote HE-LoRA session survives dropped connections.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The session talks to an in-process evaluator through a TCP relay the test
 * cuts while requests are in flight (from the session's tap, just before a
 * chosen evaluate goes out): the generation goes on over a new connection
 * and gives the golden tokens of an independent implementation, with every
 * answer applied once.
 */
#include <glib/gstdio.h>
#include <libsoup/soup.h>
#include <string.h>

#include "ckks-helora.h"
#include "ts-helora-adapter.h"
#include "ts-helora-ckks.h"

#include "server-fixture.h"
#include "tcp-relay.h"
#include "ts-helora-ckks-evaluator.h"
#include "ts-helora-session.h"
#include "ts-test-util.h"

#define PRESET "fast"
#define GOLDEN "qwen35/tiny-qwen35moe-f32/"
#define GOLDEN_LORA GOLDEN "lora/tiny-qwen35moe-lora-f32.gguf"

typedef struct {
  char *dir;
  char *lora_path;
  char *wide_lora_path;        /* rank 32: more rows than the compact ring's copies */
  ServerFixture *server;
  TcpRelay *relay;
  char *url;                   /* the relay's ws:// address */
} Fixture;

static void
write_wide_lora (const char *path)
{
  static const char *const kinds[] = { "attn_q", "attn_v", NULL };
  g_autofree char *model_path = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  g_autoptr (GError) error = NULL;
  LmModel *model = NULL;

  g_assert_cmpint (lm_model_load (model_path, &model, NULL), ==, LM_OK);
  g_assert_true (ts_helora_adapter_write_synthetic (model, path, 32, 3, kinds, &error));
  g_assert_no_error (error);
  lm_model_free (model);
}

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  gsize len;
  g_autofree guint8 *lora = ts_test_read_data (GOLDEN_LORA, &len);
  HeServerOptions options = { .n_threads = 2, .open_evaluator = ts_helora_ckks_evaluator_open };
  g_autoptr (GUri) uri = NULL;

  f->dir = g_dir_make_tmp ("he-reconnect-XXXXXX", &error);
  g_assert_no_error (error);
  f->lora_path = g_build_filename (f->dir, "tiny-lora.gguf", NULL);
  g_assert_true (g_file_set_contents (f->lora_path, (const char *) lora, len, &error));
  f->wide_lora_path = g_build_filename (f->dir, "tiny-lora-r32.gguf", NULL);
  write_wide_lora (f->wide_lora_path);
  options.adapters_dir = f->dir;
  f->server = server_fixture_start (&options);
  uri = g_uri_parse (server_fixture_http_url (f->server), G_URI_FLAGS_NONE, &error);
  g_assert_no_error (error);
  f->relay = tcp_relay_new ((guint16) g_uri_get_port (uri));
  f->url = g_strdup_printf ("ws://127.0.0.1:%u%s", tcp_relay_port (f->relay), TS_HELORA_PATH);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  tcp_relay_free (f->relay);
  if (f->server != NULL)
    server_fixture_stop (f->server);
  g_unlink (f->lora_path);
  g_unlink (f->wide_lora_path);
  g_free (f->lora_path);
  g_free (f->wide_lora_path);
  g_rmdir (f->dir);
  g_free (f->dir);
  g_free (f->url);
}

/* Cuts the relay just before the evaluates numbered in cut_at go out;
 * with stop_server, stops the evaluator first (for good). */
typedef struct {
  TcpRelay *relay;
  Fixture *stop_server;
  const guint *cut_at;
  guint n_cuts;
  guint sent;
  guint cuts;
} Cutter;

static void
cut_tap (GBytes *message, gpointer data)
{
  Cutter *c = data;
  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_decode (message, G_MAXUINT, NULL);

  if (frame == NULL || frame->type != TS_HELORA_FRAME_EVALUATE)
    return;
  c->sent++;
  for (guint i = 0; i < c->n_cuts; i++)
    if (c->sent == c->cut_at[i])
      {
        if (c->stop_server != NULL)
          {
            server_fixture_stop (c->stop_server->server);
            c->stop_server->server = NULL;
          }
        tcp_relay_cut (c->relay);
        c->cuts++;
      }
}

typedef struct {
  LmModel *model;
  LmLora *lora;
  LmSession *session;
  TsHeloraSession *helora;
} Generation;

static void
generation_clear (Generation *g)
{
  g_clear_pointer (&g->session, lm_session_free);
  g_clear_pointer (&g->helora, ts_helora_session_free);
  g_clear_pointer (&g->lora, lm_lora_free);
  g_clear_pointer (&g->model, lm_model_free);
}

static gint32
argmax (const float *logits, gsize n)
{
  gsize best = 0;

  for (gsize i = 1; i < n; i++)
    if (logits[i] > logits[best])
      best = i;
  return (gint32) best;
}

/* Greedy tokens after the golden prompt, as many as the golden run has;
 * FALSE (and the session's error in @why) when a forward pass failed. */
static gboolean
generate (Fixture *f, Generation *g, TsHeloraOptions *options, GArray *tokens, GError **why)
{
  g_autofree char *model_path = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  gsize prompt_len, golden_len;
  g_autofree gint32 *prompt = (gint32 *) ts_test_read_data (GOLDEN "prompt_tokens.bin", &prompt_len);
  g_autofree gint32 *golden = (gint32 *) ts_test_read_data (GOLDEN "lora_greedy_tokens.bin",
                                                            &golden_len);
  g_autoptr (GError) error = NULL;
  LmStatus st;
  gsize n_vocab;

  options->mode = TS_HELORA_MODE_REMOTE;
  if (options->params_preset == NULL)
    options->params_preset = PRESET;
  if (options->adapter_path == NULL)
    options->adapter_path = f->lora_path;
  options->remote_url = f->url;
  g_assert_cmpint (lm_model_load (model_path, &g->model, NULL), ==, LM_OK);
  g_assert_cmpint (lm_lora_load (g->model, options->adapter_path, 1.0f, &g->lora, NULL), ==, LM_OK);
  g->helora = ts_helora_session_new (g->lora, options, &error);
  g_assert_no_error (error);
  g_assert_cmpint (lm_session_new (g->model, NULL, &g->session), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (g->session, g->lora), ==, LM_OK);
  g_assert_true (ts_helora_session_attach (g->helora, g->session, &error));
  n_vocab = lm_model_info (g->model)->n_vocab;
  st = lm_session_prefill (g->session, prompt, prompt_len / 4, NULL);
  while (st == LM_OK && tokens->len < golden_len / 4)
    {
      gint32 id = argmax (lm_session_logits (g->session), n_vocab);
      g_array_append_val (tokens, id);
      if (tokens->len < golden_len / 4)
        st = lm_session_decode (g->session, id);
    }
  if (st != LM_OK && why != NULL)
    *why = g_error_copy (ts_helora_session_last_error (g->helora));
  return st == LM_OK;
}

static void
assert_golden (GArray *tokens)
{
  gsize len;
  g_autofree gint32 *golden = (gint32 *) ts_test_read_data (GOLDEN "lora_greedy_tokens.bin", &len);

  g_assert_cmpuint (tokens->len, ==, len / 4);
  for (guint i = 0; i < tokens->len; i++)
    g_assert_cmpint (g_array_index (tokens, gint32, i), ==, golden[i]);
}

/* Cut during the prefill (a window of requests in flight) and twice during
 * the decode (one request in flight): the same tokens, one answer applied
 * per encryption, and the recovery counted. */
static void
test_cut_mid_request (Fixture *f, gconstpointer data)
{
  static const guint cut_at[] = { 5, 120, 200 };
  Cutter cutter = { .relay = f->relay, .cut_at = cut_at, .n_cuts = G_N_ELEMENTS (cut_at) };
  TsHeloraOptions options = { .tap = cut_tap, .tap_data = &cutter };
  g_autoptr (GArray) tokens = g_array_new (FALSE, FALSE, sizeof (gint32));
  Generation g = { 0 };
  TsHeloraStats stats;

  g_assert_true (generate (f, &g, &options, tokens, NULL));
  ts_helora_session_get_stats (g.helora, &stats);
  g_test_message ("%u cuts: %u reconnects, %" G_GUINT64_FORMAT " requests resent, longest "
                  "recovery %.0f ms, %u connections; %" G_GUINT64_FORMAT " answers for %"
                  G_GUINT64_FORMAT " encryptions", cutter.cuts, stats.reconnects,
                  stats.requests_resent, stats.max_recovery_ms, tcp_relay_accepted (f->relay),
                  stats.answers_applied, stats.encryptions);
  assert_golden (tokens);
  g_assert_cmpuint (cutter.cuts, ==, G_N_ELEMENTS (cut_at));
  g_assert_cmpuint (stats.reconnects, ==, G_N_ELEMENTS (cut_at));
  g_assert_cmpuint (tcp_relay_accepted (f->relay), ==, 1 + G_N_ELEMENTS (cut_at));
  g_assert_cmpuint (stats.requests_resent, >=, G_N_ELEMENTS (cut_at));
  g_assert_cmpuint (stats.answers_applied, ==, stats.encryptions);
  /* the engine runs on every core: on more than one, each decode step's h
   * was encrypted by the begin hooks while the products ran */
  if (g_get_num_processors () > 1)
    g_assert_cmpuint (stats.encryptions_begun, >=, tokens->len - 1);
  generation_clear (&g);
}

/* Without reconnecting, the first cut fails the generation. */
static void
test_cut_without_reconnect (Fixture *f, gconstpointer data)
{
  static const guint cut_at[] = { 50 };
  Cutter cutter = { .relay = f->relay, .cut_at = cut_at, .n_cuts = 1 };
  TsHeloraOptions options = { .tap = cut_tap, .tap_data = &cutter, .reconnect_tries = -1 };
  g_autoptr (GArray) tokens = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GError) why = NULL;
  Generation g = { 0 };

  g_assert_false (generate (f, &g, &options, tokens, &why));
  g_assert_error (why, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED);
  generation_clear (&g);
}

/* The fleet gone for good: after the bounded tries, an error that names the
 * address, in about the backoff's time. */
static void
test_fleet_down (Fixture *f, gconstpointer data)
{
  static const guint cut_at[] = { 50 };
  Cutter cutter = { .relay = f->relay, .stop_server = f, .cut_at = cut_at, .n_cuts = 1 };
  TsHeloraOptions options = { .tap = cut_tap, .tap_data = &cutter, .reconnect_tries = 3 };
  g_autoptr (GArray) tokens = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GError) why = NULL;
  Generation g = { 0 };
  gint64 t0;

  /* from the cut on the relay accepts, finds no evaluator, and drops */
  t0 = g_get_monotonic_time ();
  g_assert_false (generate (f, &g, &options, tokens, &why));
  g_test_message ("gave up after %.1f s: %s", (g_get_monotonic_time () - t0) / 1e6, why->message);
  g_assert_error (why, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED);
  g_assert_nonnull (strstr (why->message, f->url));
  g_assert_nonnull (strstr (why->message, "3 connection tries"));
  g_assert_cmpint (g_get_monotonic_time () - t0, <, 10 * G_USEC_PER_SEC);
  generation_clear (&g);
}

/* A fleet mid-upgrade: its balancer answers 503 for 9 s. A new session's
 * first connection keeps trying within its timeout (30 s), then generates
 * as usual. */
#define FLEET_BACK_AFTER_US (9 * G_USEC_PER_SEC)

static gpointer
bring_fleet_back (gpointer data)
{
  g_usleep (FLEET_BACK_AFTER_US);
  tcp_relay_set_unavailable (data, FALSE);
  return NULL;
}

static void
test_first_connect_waits (Fixture *f, gconstpointer data)
{
  TsHeloraOptions options = { 0 };
  g_autoptr (GArray) tokens = g_array_new (FALSE, FALSE, sizeof (gint32));
  Generation g = { 0 };
  GThread *thread;
  gint64 t0 = g_get_monotonic_time ();

  tcp_relay_set_unavailable (f->relay, TRUE);
  thread = g_thread_new ("fleet-back", bring_fleet_back, f->relay);
  g_assert_true (generate (f, &g, &options, tokens, NULL));
  g_thread_join (thread);
  assert_golden (tokens);
  g_test_message ("%u refusals, connected after %.1f s", tcp_relay_refused (f->relay),
                  (g_get_monotonic_time () - t0) / 1e6);
  /* refused at 0, 0.5, 1.5, 3.5 and 7.5 s before the fleet is back at
   * 9 s; the jitter (±25 % a gap) can push the fifth past 9 s */
  g_assert_cmpuint (tcp_relay_refused (f->relay), >=, 4);
  g_assert_cmpint (g_get_monotonic_time () - t0, >=, FLEET_BACK_AFTER_US);
  generation_clear (&g);
}

/* No evaluator comes back: the first connection fails after a few tries
 * within its timeout, with the balancer's answer, not a bare timeout. */
static void
test_first_connect_gives_up (Fixture *f, gconstpointer data)
{
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_REMOTE, .params_preset = PRESET,
                              .adapter_path = f->lora_path, .remote_url = f->url,
                              .timeout_ms = 3000 };
  g_autofree char *model_path = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  g_autoptr (GError) error = NULL;
  LmModel *model = NULL;
  LmLora *lora = NULL;
  TsHeloraSession *helora;
  gint64 t0;

  g_assert_cmpint (lm_model_load (model_path, &model, NULL), ==, LM_OK);
  g_assert_cmpint (lm_lora_load (model, f->lora_path, 1.0f, &lora, NULL), ==, LM_OK);
  tcp_relay_set_unavailable (f->relay, TRUE);
  t0 = g_get_monotonic_time ();
  helora = ts_helora_session_new (lora, &options, &error);
  g_test_message ("gave up after %.1f s and %u refusals: %s",
                  (g_get_monotonic_time () - t0) / 1e6, tcp_relay_refused (f->relay),
                  error ? error->message : "(no error)");
  g_assert_null (helora);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED);
  g_assert_nonnull (strstr (error->message, "503"));
  g_assert_cmpuint (tcp_relay_refused (f->relay), >=, 3);
  /* the 3 s include the session's key generation, slow under sanitizers */
  g_assert_cmpint (g_get_monotonic_time () - t0, <, 10 * G_USEC_PER_SEC);
  lm_lora_free (lora);
  lm_model_free (model);
}

/* Counts the hellos a session sends and those asking for the complex
 * packing, and cuts like cut_tap. */
typedef struct {
  Cutter cutter;
  guint hellos, complex_hellos;
} HelloTap;

static void
hello_tap (GBytes *message, gpointer data)
{
  HelloTap *t = data;
  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_decode (message, G_MAXUINT, NULL);

  if (frame != NULL && frame->type == TS_HELORA_FRAME_HELLO)
    {
      t->hellos++;
      t->complex_hellos += frame->u.hello.complex_packing;
    }
  cut_tap (message, &t->cutter);
}

/* A rank-32 adapter on the compact ring (16 copies of the tiny model's
 * h a result) has the complex packing: the session asks for it by default
 * and the evaluator answers in it, with half the results and bytes down of
 * the real packing (asked for with real_packing) and the same tokens, Δ
 * within 1e-6 of the plaintext one relative to its size both ways, and the
 * hello said again after a cut asks for it again (else the answers would
 * not parse). */
static void
test_complex_packing (Fixture *f, gconstpointer data)
{
  static const guint cut_at[] = { 40 };
  HelloTap complex_tap = { .cutter = { .relay = f->relay, .cut_at = cut_at, .n_cuts = 1 } };
  HelloTap real_tap = { .cutter = { .relay = f->relay } };
  TsHeloraOptions complex_options = { .params_preset = "compact", .adapter_path = f->wide_lora_path,
                                      .track_error = TRUE, .tap = hello_tap,
                                      .tap_data = &complex_tap };
  TsHeloraOptions real_options = { .params_preset = "compact", .adapter_path = f->wide_lora_path,
                                   .track_error = TRUE, .tap = hello_tap, .tap_data = &real_tap,
                                   .real_packing = TRUE };
  g_autoptr (GArray) complex_tokens = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GArray) real_tokens = g_array_new (FALSE, FALSE, sizeof (gint32));
  Generation g = { 0 };
  TsHeloraStats cs, rs;

  g_assert_true (generate (f, &g, &complex_options, complex_tokens, NULL));
  ts_helora_session_get_stats (g.helora, &cs);
  generation_clear (&g);
  g_assert_true (generate (f, &g, &real_options, real_tokens, NULL));
  ts_helora_session_get_stats (g.helora, &rs);
  generation_clear (&g);
  g_test_message ("bytes down: complex %" G_GUINT64_FORMAT ", real %" G_GUINT64_FORMAT
                  "; max |dΔ| %.3g / %.3g of max |Δ| %.3g; hellos %u (complex %u), %u",
                  cs.bytes_down, rs.bytes_down, cs.max_abs_delta_error, rs.max_abs_delta_error,
                  cs.max_abs_delta_plain, complex_tap.hellos, complex_tap.complex_hellos,
                  real_tap.hellos);
  g_assert_cmpuint (complex_tokens->len, ==, real_tokens->len);
  g_assert_cmpmem (complex_tokens->data, complex_tokens->len * sizeof (gint32),
                   real_tokens->data, real_tokens->len * sizeof (gint32));
  g_assert_cmpfloat (cs.max_abs_delta_plain, >, 0.0);
  g_assert_cmpfloat (cs.max_abs_delta_error, <=, 1e-6 * cs.max_abs_delta_plain);
  g_assert_cmpfloat (rs.max_abs_delta_error, <=, 1e-6 * rs.max_abs_delta_plain);
  g_assert_cmpuint (cs.reconnects, ==, 1);
  g_assert_cmpuint (complex_tap.hellos, ==, 2);      /* the first and the one said again */
  g_assert_cmpuint (complex_tap.complex_hellos, ==, 2);
  g_assert_cmpuint (real_tap.hellos, ==, 1);
  g_assert_cmpuint (real_tap.complex_hellos, ==, 0);
  g_assert_cmpuint (cs.answers_applied, ==, rs.answers_applied);
  g_assert_cmpuint (cs.bytes_down * 10, <, rs.bytes_down * 6);
}

/* A server that predates the complex packing: it refuses a hello with the
 * flag as malformed, as such a server's frame decoder does, and
 * acknowledges one without it with the real packing's result counts. */
typedef struct {
  GThread *thread;
  GMainContext *context;
  GMainLoop *loop;
  GMutex lock;
  GCond cond;
  guint port;
  const LmLora *lora;
  CkksContext *ctx;
  guint hellos, refused;
  GPtrArray *connections;      /* kept open until the end */
} OldServer;

static TsHeloraFrame *
old_server_answer (OldServer *s, const TsHeloraFrame *hello)
{
  if (hello->u.hello.complex_packing)
    {
      s->refused++;
      return ts_helora_frame_new_status (TS_HELORA_FRAME_ERROR, hello->request_id,
                                         TS_HELORA_ERROR_MALFORMED, "Frame has non-zero flags");
    }
  TsHeloraFrame *ack = ts_helora_frame_new (TS_HELORA_FRAME_HELLO_ACK, hello->request_id);
  ack->u.ack.max_frame_bytes = 64u << 20;
  ack->u.ack.max_in_flight = 4;
  ack->u.ack.idle_timeout_ms = 60000;
  for (gsize i = 0; i < lm_lora_n_modules (s->lora); i++)
    {
      const LmLoraModule *m = lm_lora_module (s->lora, i);
      CkksHeloraLayout *layout = NULL;
      g_assert_cmpint (ckks_helora_layout_new (s->ctx, m->d_in, m->rank, &layout), ==, CKKS_OK);
      TsHeloraModuleShape shape = { m->d_in, m->rank,
                                    (guint16) ckks_helora_layout_n_outputs (layout) };
      g_array_append_val (ack->u.ack.modules, shape);
      ckks_helora_layout_free (layout);
    }
  return ack;
}

static void
old_server_message (SoupWebsocketConnection *ws, gint type, GBytes *message, gpointer data)
{
  OldServer *s = data;
  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_decode (message, G_MAXUINT, NULL);

  if (frame == NULL || frame->type != TS_HELORA_FRAME_HELLO)
    return;
  s->hellos++;
  g_autoptr (TsHeloraFrame) reply = old_server_answer (s, frame);
  g_autoptr (GBytes) bytes = ts_helora_frame_encode (reply, NULL);
  soup_websocket_connection_send_message (ws, SOUP_WEBSOCKET_DATA_BINARY, bytes);
}

static void
old_server_connection (SoupServer *server, SoupServerMessage *msg, const char *path,
                       SoupWebsocketConnection *ws, gpointer data)
{
  OldServer *s = data;

  g_ptr_array_add (s->connections, g_object_ref (ws));
  g_signal_connect (ws, "message", G_CALLBACK (old_server_message), s);
}

static gpointer
old_server_thread (gpointer data)
{
  OldServer *s = data;
  g_autoptr (GError) error = NULL;

  g_main_context_push_thread_default (s->context);
  g_autoptr (SoupServer) server = soup_server_new (NULL, NULL);
  soup_server_add_websocket_handler (server, TS_HELORA_PATH, NULL, NULL, old_server_connection,
                                     s, NULL);
  g_assert_true (soup_server_listen_local (server, 0, SOUP_SERVER_LISTEN_IPV4_ONLY, &error));
  g_assert_no_error (error);
  GSList *uris = soup_server_get_uris (server);
  g_mutex_lock (&s->lock);
  s->port = (guint) g_uri_get_port (uris->data);
  g_cond_signal (&s->cond);
  g_mutex_unlock (&s->lock);
  g_slist_free_full (uris, (GDestroyNotify) g_uri_unref);
  g_main_loop_run (s->loop);
  g_ptr_array_set_size (s->connections, 0);
  soup_server_disconnect (server);
  g_main_context_pop_thread_default (s->context);
  return NULL;
}

static gboolean
quit_loop (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

static void
test_older_server (Fixture *f, gconstpointer data)
{
  g_autofree char *model_path = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  g_autoptr (GError) error = NULL;
  LmModel *model = NULL;
  LmLora *lora = NULL;
  OldServer s = { .context = g_main_context_new () };

  g_assert_cmpint (lm_model_load (model_path, &model, NULL), ==, LM_OK);
  g_assert_cmpint (lm_lora_load (model, f->wide_lora_path, 1.0f, &lora, NULL), ==, LM_OK);
  s.lora = lora;
  s.ctx = ts_helora_ckks_context_new ("compact", &error);
  g_assert_no_error (error);
  s.loop = g_main_loop_new (s.context, FALSE);
  s.connections = g_ptr_array_new_with_free_func (g_object_unref);
  g_mutex_init (&s.lock);
  g_cond_init (&s.cond);
  g_mutex_lock (&s.lock);
  s.thread = g_thread_new ("old-server", old_server_thread, &s);
  while (s.port == 0)
    g_cond_wait (&s.cond, &s.lock);
  g_mutex_unlock (&s.lock);

  g_autofree char *url = g_strdup_printf ("ws://127.0.0.1:%u%s", s.port, TS_HELORA_PATH);
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_REMOTE, .params_preset = "compact",
                              .adapter_path = f->wide_lora_path, .remote_url = url,
                              .reconnect_tries = -1 };
  TsHeloraSession *session = ts_helora_session_new (lora, &options, &error);
  g_assert_no_error (error);
  g_assert_nonnull (session);
  ts_helora_session_free (session);

  g_main_context_invoke (s.context, quit_loop, s.loop);
  g_thread_join (s.thread);
  g_assert_cmpuint (s.hellos, ==, 2);
  g_assert_cmpuint (s.refused, ==, 1);
  g_ptr_array_unref (s.connections);
  g_main_loop_unref (s.loop);
  g_main_context_unref (s.context);
  g_mutex_clear (&s.lock);
  g_cond_clear (&s.cond);
  ckks_context_free (s.ctx);
  lm_lora_free (lora);
  lm_model_free (model);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add ("/he-reconnect/cut-mid-request", Fixture, NULL, fixture_set_up,
              test_cut_mid_request, fixture_tear_down);
  g_test_add ("/he-reconnect/cut-without-reconnect", Fixture, NULL, fixture_set_up,
              test_cut_without_reconnect, fixture_tear_down);
  g_test_add ("/he-reconnect/fleet-down", Fixture, NULL, fixture_set_up,
              test_fleet_down, fixture_tear_down);
  g_test_add ("/he-reconnect/first-connect-waits", Fixture, NULL, fixture_set_up,
              test_first_connect_waits, fixture_tear_down);
  g_test_add ("/he-reconnect/complex-packing", Fixture, NULL, fixture_set_up,
              test_complex_packing, fixture_tear_down);
  g_test_add ("/he-reconnect/older-server", Fixture, NULL, fixture_set_up,
              test_older_server, fixture_tear_down);
  g_test_add ("/he-reconnect/first-connect-gives-up", Fixture, NULL, fixture_set_up,
              test_first_connect_gives_up, fixture_tear_down);
  return g_test_run ();
}
