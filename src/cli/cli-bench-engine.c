/* cli-bench-engine.c: tensafe-cli bench engine: prefill and decode tokens/s.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "lm.h"
#include "read-bandwidth.h"
#include "ts-timings.h"

#define CMD "tensafe-cli bench engine"
/* Passes over the read-bandwidth buffer; the fastest counts. */
#define READ_PASSES 5

typedef struct {
  char *model, *backend, *clock_name;
  int threads, n_prompt, n_decode, runs, n_batch, gpu_layers, read_mib;
  gboolean json;
  LmBackend backend_id;
  clockid_t clock;
} BenchOptions;

/* Milliseconds on the chosen clock. The process's CPU time (every worker
 * thread's) leaves out the time other programs hold the cores, which on a
 * shared machine moves wall-clock rates by more than the changes measured. */
static double
now_ms (const BenchOptions *o)
{
  struct timespec ts;
  clock_gettime (o->clock, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static double
peak_rss_mib (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;   /* ru_maxrss is in KiB on Linux */
}

/* One run: prefill @n_prompt tokens, then @n_decode single-token steps;
 * returns the two rates in tokens/s. */
static LmStatus
bench_run (LmSession *s, const int32_t *tokens, const BenchOptions *o, double *prefill_tps,
           double *decode_tps)
{
  lm_session_reset (s);
  double t0 = now_ms (o);
  LmStatus st = lm_session_prefill (s, tokens, (size_t) o->n_prompt, NULL);
  if (st != LM_OK)
    return st;
  double t1 = now_ms (o);
  for (int i = 0; i < o->n_decode && st == LM_OK; i++)
    st = lm_session_decode (s, tokens[i % o->n_prompt]);
  double t2 = now_ms (o);
  *prefill_tps = o->n_prompt * 1e3 / (t1 - t0);
  *decode_tps = o->n_decode * 1e3 / (t2 - t1);
  return st;
}

static bool
parse_options (int *argc, char ***argv, BenchOptions *o)
{
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &o->model, "GGUF model file", "FILE" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &o->threads, "Worker threads (default: all cores)", "N" },
    { "backend", 0, 0, G_OPTION_ARG_STRING, &o->backend, "cpu (default), cuda or auto", "NAME" },
    { "gpu-layers", 0, 0, G_OPTION_ARG_INT, &o->gpu_layers, "Layers on the GPU, from the first (default: all)", "N" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &o->json, "Print one JSON object", NULL },
    { "prompt-tokens", 0, 0, G_OPTION_ARG_INT, &o->n_prompt, "Prompt length (default 128)", "N" },
    { "decode-tokens", 0, 0, G_OPTION_ARG_INT, &o->n_decode, "Decode steps (default 64)", "N" },
    { "runs", 0, 0, G_OPTION_ARG_INT, &o->runs, "Runs; the median is reported (default 3)", "N" },
    { "batch", 0, 0, G_OPTION_ARG_INT, &o->n_batch, "Tokens per prefill step (default 64)", "N" },
    { "clock", 0, 0, G_OPTION_ARG_STRING, &o->clock_name,
      "wall (default) or cpu: tokens per second of the process's CPU time", "C" },
    { "read-mib", 0, 0, G_OPTION_ARG_INT, &o->read_mib,
      "Buffer of the read-bandwidth measurement, MiB (default 256)", "N" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- engine throughput");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, argc, argv, &error))
    {
      fprintf (stderr, CMD ": %s\n", error->message);
      return false;
    }
  if (o->model == NULL || *argc != 1 || o->threads < 0 || o->n_prompt < 1 || o->n_decode < 1 ||
      o->runs < 1 || o->runs > 100 || o->n_batch < 1 || o->gpu_layers < 0 ||
      o->read_mib < LM_READ_BANDWIDTH_MIN_MIB || o->read_mib > LM_READ_BANDWIDTH_MAX_MIB ||
      (o->backend != NULL && !lm_backend_from_name (o->backend, &o->backend_id)))
    {
      fprintf (stderr, "Usage: " CMD " --model FILE [--threads N] [--backend cpu|cuda|auto "
               "[--gpu-layers N]] [--clock wall|cpu] [--read-mib %d..%d] [--json]\n",
               LM_READ_BANDWIDTH_MIN_MIB, LM_READ_BANDWIDTH_MAX_MIB);
      return false;
    }
  o->clock = CLOCK_MONOTONIC;
  if (o->clock_name != NULL && strcmp (o->clock_name, "cpu") == 0)
    o->clock = CLOCK_PROCESS_CPUTIME_ID;
  else if (o->clock_name != NULL && strcmp (o->clock_name, "wall") != 0)
    {
      fprintf (stderr, CMD ": --clock must be wall or cpu\n");
      return false;
    }
  return true;
}

static const char *
clock_label (const BenchOptions *o)
{
  return o->clock == CLOCK_PROCESS_CPUTIME_ID ? "cpu" : "wall";
}

/* The CPU report. Decode cannot beat @bandwidth (bytes per second of the
 * same clock and threads) over the bytes one token reads: that ceiling, and
 * decode as a share of it, say how close to the memory floor decode runs. */
static void
report_cpu (const BenchOptions *o, const LmModel *m, int threads, double p, double d,
            double rss_mib, double bandwidth)
{
  double token_bytes = (double) lm_model_decode_bytes (m);
  double ceiling = bandwidth / token_bytes, percent = 100.0 * d / ceiling;
  if (o->json)
    printf ("{\"model\": \"%s\", \"threads\": %d, \"backend\": \"cpu\", \"clock\": \"%s\", "
            "\"prefill_tok_s\": %.2f, \"decode_tok_s\": %.2f, \"decode_bytes_per_token\": %.0f, "
            "\"read_bandwidth_gb_s\": %.3f, \"read_mib\": %d, \"decode_ceiling_tok_s\": %.3f, "
            "\"decode_of_ceiling_pct\": %.1f, \"peak_rss_mib\": %.1f}\n",
            o->model, threads, clock_label (o), p, d, token_bytes, bandwidth / 1e9, o->read_mib,
            ceiling, percent, rss_mib);
  else
    printf ("model %s\nthreads %d, backend cpu, %s clock\nprefill %.2f tok/s (%d tokens)\n"
            "decode %.2f tok/s (%d tokens), %.0f bytes (%.1f MiB) of weights read per token "
            "(%.2f GB/s)\n"
            "read bandwidth %.3f GB/s (%d threads, %d MiB): ceiling %.3f tok/s, decode at %.1f %%\n"
            "peak RSS %.1f MiB\n",
            o->model, threads, clock_label (o), p, o->n_prompt, d, o->n_decode, token_bytes,
            token_bytes / 1048576.0, token_bytes * d / 1e9, bandwidth / 1e9, threads, o->read_mib,
            ceiling, percent, rss_mib);
}

/* The read bandwidth right after a run, with its threads and clock: the
 * other load of a shared machine moves both alike. */
static LmStatus
measure_bandwidth (const BenchOptions *o, int threads, double *bandwidth)
{
  LmStatus st = lm_read_bandwidth ((size_t) o->read_mib, READ_PASSES, threads, o->clock,
                                   bandwidth);
  if (st == LM_OK && *bandwidth <= 0)
    st = LM_ERR_IO;   /* no time elapsed: a clock too coarse to use */
  if (st != LM_OK)
    fprintf (stderr, CMD ": cannot measure the read bandwidth: %s\n", lm_status_message (st));
  return st;
}

/* The GPU report: the same rates, the layers on the GPU and its memory. */
static void
report_cuda (const BenchOptions *o, const LmModel *m, const LmSession *s, double p, double d)
{
  size_t weights, session;
  lm_session_gpu_memory (s, &weights, &session);
  uint32_t layers = lm_session_gpu_layers (s), n_layer = lm_model_info (m)->n_layer;
  double read_mib = lm_model_decode_bytes (m) / 1048576.0;
  if (o->json)
    printf ("{\"model\": \"%s\", \"backend\": \"cuda\", \"gpu_layers\": %u, \"n_layer\": %u, "
            "\"prefill_tok_s\": %.2f, \"decode_tok_s\": %.2f, \"decode_read_mib\": %.1f, "
            "\"gpu_weights_mib\": %.1f, \"gpu_session_mib\": %.1f, \"peak_rss_mib\": %.1f}\n",
            o->model, layers, n_layer, p, d, read_mib, weights / 1048576.0,
            session / 1048576.0, peak_rss_mib ());
  else
    printf ("model %s\nbackend cuda, %u of %u layers on the GPU\nprefill %.2f tok/s (%d tokens)\n"
            "decode %.2f tok/s (%d tokens), %.1f MiB of weights read per token (%.2f GB/s)\n"
            "GPU memory %.1f MiB (weights %.1f MiB, session %.1f MiB)\npeak RSS %.1f MiB\n",
            o->model, layers, n_layer, p, o->n_prompt, d, o->n_decode, read_mib,
            lm_model_decode_bytes (m) * d / 1e9, (weights + session) / 1048576.0,
            weights / 1048576.0, session / 1048576.0, peak_rss_mib ());
}

/* @o->runs runs, each followed on the CPU by a bandwidth measurement: the
 * other load of a shared machine then moves both alike. The runs repeat the
 * same work, so the peak RSS after the first is theirs (later it would
 * include the bandwidth buffer). Says on stderr why it failed. */
static bool
run_and_measure (LmSession *s, const int32_t *tokens, const BenchOptions *o, int threads,
                 bool cpu, double *pre, double *dec, double *bw, double *rss_mib)
{
  for (int r = 0; r < o->runs; r++)
    {
      LmStatus st = bench_run (s, tokens, o, &pre[r], &dec[r]);
      if (st != LM_OK)
        {
          fprintf (stderr, CMD ": %s\n", lm_status_message (st));
          return false;
        }
      if (r == 0)
        *rss_mib = peak_rss_mib ();
      if (cpu && measure_bandwidth (o, threads, &bw[r]) != LM_OK)
        return false;
    }
  return true;
}

static int
run_bench (const BenchOptions *o, LmModel *m, int threads)
{
  LmSessionParams params = { .n_ctx = (uint32_t) (o->n_prompt + o->n_decode),
                             .n_batch = (uint32_t) o->n_batch, .n_threads = (uint32_t) threads,
                             .backend = o->backend_id, .gpu_layers = (uint32_t) o->gpu_layers };
  LmSession *s = NULL;
  char *msg = NULL;
  LmStatus st = lm_session_new_full (m, &params, &s, &msg);
  if (st != LM_OK)
    {
      fprintf (stderr, CMD ": cannot create a session: %s\n", msg ? msg : lm_status_message (st));
      free (msg);
      return 1;
    }
  if (lm_session_backend_note (s) != NULL)
    fprintf (stderr, CMD ": %s\n", lm_session_backend_note (s));
  int32_t *tokens = malloc ((size_t) o->n_prompt * sizeof (int32_t));
  double *pre = calloc ((size_t) o->runs, sizeof (double));
  double *dec = calloc ((size_t) o->runs, sizeof (double));
  double *bw = calloc ((size_t) o->runs, sizeof (double));
  bool cpu = lm_session_gpu_layers (s) == 0, ok = false;
  double rss_mib = 0;
  uint32_t V = lm_model_info (m)->n_vocab;
  for (int i = 0; tokens != NULL && i < o->n_prompt; i++)
    tokens[i] = (int32_t) ((i * 7919u + 13u) % V);   /* fixed, varied ids */
  if (tokens == NULL || pre == NULL || dec == NULL || bw == NULL)
    fprintf (stderr, CMD ": %s\n", lm_status_message (LM_ERR_NO_MEMORY));
  else
    ok = run_and_measure (s, tokens, o, threads, cpu, pre, dec, bw, &rss_mib);
  if (ok)
    {
      double p = ts_median (pre, (guint) o->runs), d = ts_median (dec, (guint) o->runs);
      if (!cpu)
        report_cuda (o, m, s, p, d);
      else
        report_cpu (o, m, threads, p, d, rss_mib, ts_median (bw, (guint) o->runs));
    }
  free (tokens);
  free (pre);
  free (dec);
  free (bw);
  lm_session_free (s);
  return ok ? 0 : 1;
}

int
cli_bench_engine (int argc, char **argv)
{
  BenchOptions o = { .n_prompt = 128, .n_decode = 64, .runs = 3, .n_batch = 64, .read_mib = 256 };
  if (!parse_options (&argc, &argv, &o))
    return 2;
  LmModel *m = NULL;
  char *msg = NULL;
  LmStatus st = lm_model_load (o.model, &m, &msg);
  int rc = 1;
  if (st != LM_OK)
    fprintf (stderr, CMD ": %s: %s\n", o.model, msg ? msg : lm_status_message (st));
  else
    {
      long cores = sysconf (_SC_NPROCESSORS_ONLN);
      rc = run_bench (&o, m, o.threads > 0 ? o.threads : (int) (cores > 0 ? cores : 1));
    }
  free (msg);
  lm_model_free (m);
  g_free (o.model);
  g_free (o.backend);
  g_free (o.clock_name);
  return rc;
}
