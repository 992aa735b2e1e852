/* he-server-main.c: tensafe-he-server, the remote HE-LoRA evaluator: options and main loop.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib-unix.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

#include "he-server-service.h"
#include "lm.h"
#include "ts-core.h"
#include "ts-helora-ckks-evaluator.h"

typedef struct {
  char *listen;
  char *adapters;
  char *model;
  int threads;
  char *tls_cert;
  char *tls_key;
  int max_frame_mib;
  int max_in_flight;
  int idle_timeout_s;
  int max_unread_kib;
  int max_conns_per_address;   /* -1: not given */
  int drain_timeout_s;
  gboolean watch;
  gboolean version;
  char *privacy_state;
  char *privacy_budget;        /* "EPS,DELTA" */
  double privacy_epsilon, privacy_delta;
  int privacy_min_lambda;
  int pad_pool_answers;
  int pad_pool_mib;
  int pad_refill_idle_ms;
} Options;

static void options_clear (Options *o);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Options, options_clear)

/* Option strings are owned by us once parsed; freed so that a clean exit
 * leaves nothing behind for the leak checker. */
static void
options_clear (Options *o)
{
  g_clear_pointer (&o->listen, g_free);
  g_clear_pointer (&o->adapters, g_free);
  g_clear_pointer (&o->model, g_free);
  g_clear_pointer (&o->tls_cert, g_free);
  g_clear_pointer (&o->tls_key, g_free);
  g_clear_pointer (&o->privacy_state, g_free);
  g_clear_pointer (&o->privacy_budget, g_free);
}

static gboolean
quit_cb (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_CONTINUE;
}

typedef struct {
  GMainLoop *loop;
  HeServer *server;
} Running;

/* Every session ended, or the drain timeout closes those left (on exit). */
static void
drained_cb (gpointer data)
{
  g_main_loop_quit (((Running *) data)->loop);
}

/* SIGUSR1 drains, as POST /admin/drain does. */
static gboolean
drain_signal_cb (gpointer data)
{
  he_server_drain (((Running *) data)->server);
  return G_SOURCE_CONTINUE;
}

static gboolean
parse_privacy_budget (Options *o, GError **error)
{
  char *end = NULL;
  if (o->privacy_budget == NULL)
    return TRUE;
  o->privacy_epsilon = g_ascii_strtod (o->privacy_budget, &end);
  if (end != NULL && *end == ',')
    o->privacy_delta = g_ascii_strtod (end + 1, &end);
  if (end == NULL || *end != '\0' || !(o->privacy_epsilon > 0.0 && o->privacy_epsilon < 1e6)
      || !(o->privacy_delta > 0.0 && o->privacy_delta < 1.0))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--privacy-budget wants EPS,DELTA (EPS > 0, 0 < DELTA < 1)");
      return FALSE;
    }
  return TRUE;
}

static gboolean
parse_options (Options *o, int *argc, char ***argv, GError **error)
{
  GOptionEntry entries[] = {
    { "listen", 0, 0, G_OPTION_ARG_STRING, &o->listen, "Address to listen on (default 127.0.0.1:8765; port 0 picks one)", "ADDR:PORT" },
    { "adapters", 0, 0, G_OPTION_ARG_FILENAME, &o->adapters, "Directory of adapters (GGUF LoRA files or PEFT folders)", "DIR" },
    { "model", 0, 0, G_OPTION_ARG_FILENAME, &o->model, "Base model: check adapter shapes, accept PEFT folders and stacked adapters", "FILE" },
    { "threads", 0, 0, G_OPTION_ARG_INT, &o->threads, "Evaluation worker threads (default: one per CPU)", "N" },
    { "tls-cert", 0, 0, G_OPTION_ARG_FILENAME, &o->tls_cert, "TLS certificate (PEM)", "FILE" },
    { "tls-key", 0, 0, G_OPTION_ARG_FILENAME, &o->tls_key, "TLS private key (PEM)", "FILE" },
    { "max-frame-mib", 0, 0, G_OPTION_ARG_INT, &o->max_frame_mib, "Largest frame accepted (default 64)", "MIB" },
    { "max-in-flight", 0, 0, G_OPTION_ARG_INT, &o->max_in_flight, "Evaluate requests in flight per client (default 8)", "N" },
    { "idle-timeout", 0, 0, G_OPTION_ARG_INT, &o->idle_timeout_s, "Close clients idle this long (default 120)", "SECONDS" },
    { "max-connections-per-address", 0, 0, G_OPTION_ARG_INT, &o->max_conns_per_address, "Connections one client address may hold open (default 64; 0: no cap, as behind a proxy)", "N" },
    { "max-unread-kib", 0, 0, G_OPTION_ARG_INT, &o->max_unread_kib, "Close a client that leaves this much of its answers unread (default 8192)", "KIB" },
    { "drain-timeout", 0, 0, G_OPTION_ARG_INT, &o->drain_timeout_s, "After SIGUSR1 or POST /admin/drain, exit once the open sessions end, or after this long (default 300)", "SECONDS" },
    { "watch", 0, 0, G_OPTION_ARG_NONE, &o->watch, "Reload an adapter when its file in DIR changes (hot-swap)", NULL },
    { "version", 0, 0, G_OPTION_ARG_NONE, &o->version, "Print the version", NULL },
    { "privacy-budget", 0, 0, G_OPTION_ARG_STRING, &o->privacy_budget, "Adapter-private mode: DP budget per client (enables DP requests)", "EPS,DELTA" },
    { "privacy-state", 0, 0, G_OPTION_ARG_FILENAME, &o->privacy_state, "File the spent budgets are loaded from and saved to", "FILE" },
    { "privacy-min-lambda", 0, 0, G_OPTION_ARG_INT, &o->privacy_min_lambda, "Adapter-private mode: refuse clients asking for less flooding (default 40)", "BITS" },
    { "pad-pool-answers", 0, 0, G_OPTION_ARG_INT, &o->pad_pool_answers, "Adapter-private mode: privacy pads kept ready per module, in answers (default 2)", "N" },
    { "pad-pool-mib", 0, 0, G_OPTION_ARG_INT, &o->pad_pool_mib, "Adapter-private mode: memory cap of all pad pools (default 256)", "MIB" },
    { "pad-refill-idle-ms", 0, 0, G_OPTION_ARG_INT, &o->pad_refill_idle_ms, "Adapter-private mode: make pads only after this long without private answers, unless a pool runs below 2 answers (default 0: at once)", "MS" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- remote HE-LoRA evaluator");

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, argc, argv, error))
    return FALSE;
  if (!o->version && o->adapters == NULL)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED, "--adapters DIR is required");
      return FALSE;
    }
  if (o->threads < 0 || o->max_frame_mib < 0 || o->max_frame_mib > 1024
      || o->max_in_flight < 0 || o->idle_timeout_s < 0
      || o->drain_timeout_s < 0 || o->drain_timeout_s > 86400
      || o->max_unread_kib < 0 || o->max_unread_kib > (1 << 22)
      || o->max_conns_per_address < -1 || o->max_conns_per_address > 1000000
      || o->privacy_min_lambda < 0 || o->privacy_min_lambda > 100
      || o->pad_pool_answers < 0 || o->pad_pool_answers > 1000
      || o->pad_pool_mib < 0 || o->pad_pool_mib > (1 << 20)
      || o->pad_refill_idle_ms < 0 || o->pad_refill_idle_ms > 3600 * 1000)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "A numeric option is out of range");
      return FALSE;
    }
  return parse_privacy_budget (o, error);
}

static HeServer *
start (const Options *o, LmModel *model, GError **error)
{
  HeServerOptions so = {
    .adapters_dir = o->adapters,
    .n_threads = o->threads,
    .max_frame_bytes = (guint) o->max_frame_mib << 20,
    .max_in_flight = o->max_in_flight,
    .idle_timeout_ms = (guint) o->idle_timeout_s * 1000,
    .max_unread_bytes = (gsize) o->max_unread_kib << 10,
    .max_conns_per_address = o->max_conns_per_address == 0 ? -1
                             : MAX (o->max_conns_per_address, 0),
    .tls_cert = o->tls_cert,
    .tls_key = o->tls_key,
    .watch_adapters = o->watch,
    .drain_timeout_ms = (guint) o->drain_timeout_s * 1000,
    .open_evaluator = ts_helora_ckks_evaluator_open,
    .open_stack = ts_helora_ckks_evaluator_open_stack,
    .open_data = model,
    .privacy_epsilon = o->privacy_epsilon,
    .privacy_delta = o->privacy_delta,
    .privacy_state = o->privacy_state,
    .privacy_min_lambda = (guint) o->privacy_min_lambda,
    .pad_pool_answers = (guint) o->pad_pool_answers,
    .pad_pool_bytes = (gsize) o->pad_pool_mib << 20,
    .pad_refill_idle_ms = (guint) o->pad_refill_idle_ms,
  };
  HeServer *server = he_server_new (&so, error);

  if (server != NULL && !he_server_listen (server, o->listen ? o->listen : "127.0.0.1:8765", error))
    g_clear_pointer (&server, he_server_free);
  return server;
}

int
main (int argc, char **argv)
{
  g_auto (Options) o = { .max_conns_per_address = -1, .drain_timeout_s = 300 };
  Running running = { 0 };
  g_autoptr (GError) error = NULL;
  g_autoptr (GMainLoop) loop = NULL;
  g_autofree char *url = NULL;
  LmModel *model = NULL;
  char *msg = NULL;
  HeServer *server;

  setlocale (LC_ALL, "");
  if (!parse_options (&o, &argc, &argv, &error))
    {
      fprintf (stderr, "tensafe-he-server: %s\n", error->message);
      return 2;
    }
  if (o.version)
    {
      printf ("tensafe-he-server %s\n", ts_version ());
      return 0;
    }
  if (o.model != NULL && lm_model_load (o.model, &model, &msg) != LM_OK)
    {
      fprintf (stderr, "tensafe-he-server: %s: %s\n", o.model, msg ? msg : "cannot load");
      free (msg);
      return 1;
    }
  server = start (&o, model, &error);
  if (server == NULL)
    {
      fprintf (stderr, "tensafe-he-server: %s\n", error->message);
      lm_model_free (model);
      return 1;
    }
  url = he_server_get_url (server);
  printf ("listening on %s\n", url);
  fflush (stdout);
  loop = g_main_loop_new (NULL, FALSE);
  running = (Running) { .loop = loop, .server = server };
  he_server_set_drained_func (server, drained_cb, &running);
  g_unix_signal_add (SIGTERM, quit_cb, loop);
  g_unix_signal_add (SIGINT, quit_cb, loop);
  g_unix_signal_add (SIGUSR1, drain_signal_cb, &running);
  g_main_loop_run (loop);
  he_server_free (server);
  lm_model_free (model);
  g_message ("stopped");
  return 0;
}
