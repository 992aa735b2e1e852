/* cli-make-model.c: tensafe-cli make-model, a GGUF test model with seeded random weights.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "gguf-synth.h"
#include "gguf.h"

static bool
pick (const char *value, const char *const *names, int n, int *out)
{
  for (int i = 0; i < n; i++)
    if (value && strcmp (value, names[i]) == 0)
      {
        *out = i;
        return true;
      }
  return false;
}

/* Set by SIGINT / SIGTERM: the write stops at the next chunk and removes its
 * temporary file instead of leaving half a model behind. */
static volatile sig_atomic_t stop_requested;

static void
on_stop_signal (int sig)
{
  (void) sig;
  stop_requested = 1;
}

typedef struct {
  gint64 start, last;   /* monotonic µs */
  bool shown, tty;
} ProgressLine;

/* Prints "NN% (X of Y GB)" on stderr at most once a second, from the first
 * second on, so short writes stay quiet. */
static bool
show_progress (uint64_t done, uint64_t total, void *user_data)
{
  ProgressLine *p = user_data;
  gint64 now = g_get_monotonic_time ();
  bool last = done == total;
  if ((now - p->last >= G_USEC_PER_SEC && now - p->start >= G_USEC_PER_SEC) || (last && p->shown))
    {
      double secs = (now - p->start) / (double) G_USEC_PER_SEC;
      fprintf (stderr, "%s%3.0f%% (%.2f of %.2f GB, %.0f MB/s)%s", p->tty ? "\r" : "",
               total ? 100.0 * done / total : 100.0, done / 1e9, total / 1e9,
               secs > 0 ? done / 1e6 / secs : 0.0, p->tty && !last ? "" : "\n");
      fflush (stderr);
      p->last = now;
      p->shown = true;
    }
  return !stop_requested;
}

static void
print_plan (const LmSynthOptions *o, const LmSynthPlan *plan, const char *arch,
            const char *preset, const char *type)
{
  const LmSynthHparams *hp = &plan->hp;
  uint32_t n_full = 0;
  for (uint32_t i = 0; i < hp->n_layer; i++)
    n_full += (i + 1) % hp->full_attn_interval == 0;
  bool hybrid = n_full < hp->n_layer;
  printf ("model:        %s, preset %s, %s\n", arch, preset, type);
  printf ("layers:       %u (%u Gated DeltaNet, %u full attention)\n", hp->n_layer,
          hp->n_layer - n_full, n_full);
  printf ("embedding:    %u, vocabulary %u\n", hp->n_embd, hp->n_vocab);
  printf ("attention:    %u query / %u KV heads of %u, %u rotary, rope base %.0f\n", hp->n_head,
          hp->n_head_kv, hp->head_dim, hp->n_rot, hp->rope_base);
  if (hybrid)
    printf ("deltanet:     %u key / %u value heads of %u, conv kernel %u\n", hp->ssm_groups,
            hp->ssm_heads, hp->ssm_state, hp->conv_kernel);
  if (hp->n_expert > 0 && hp->n_ff_shexp > 0)
    printf ("experts:      %u of width %u, %u routed + 1 shared of width %u per token\n",
            hp->n_expert, hp->n_ff_exp, hp->n_expert_used, hp->n_ff_shexp);
  else if (hp->n_expert > 0)
    printf ("experts:      %u of width %u, %u routed per token\n", hp->n_expert, hp->n_ff_exp,
            hp->n_expert_used);
  else
    printf ("ffn:          dense, width %u\n", hp->n_ff);
  printf ("tensors:      %zu\n", plan->n_tensors);
  printf ("weights:      %" G_GUINT64_FORMAT " (%.2f billion)\n", plan->n_params,
          plan->n_params / 1e9);
  printf ("file size:    %" G_GUINT64_FORMAT " bytes (%.2f GB)\n", plan->file_bytes,
          plan->file_bytes / 1e9);
  printf ("decode reads: %" G_GUINT64_FORMAT " bytes per token (%.1f MB)\n", plan->decode_bytes,
          plan->decode_bytes / 1e6);
}

/* Writes the model, with progress and a clean stop on Ctrl-C. */
static LmStatus
write_model (LmSynthOptions *options, const char *out, char **msg)
{
  ProgressLine line = { .tty = isatty (STDERR_FILENO) };
  line.start = line.last = g_get_monotonic_time ();
  options->progress = show_progress;
  options->progress_data = &line;
  struct sigaction sa = { .sa_handler = on_stop_signal }, old_int, old_term;
  sigemptyset (&sa.sa_mask);
  sigaction (SIGINT, &sa, &old_int);
  sigaction (SIGTERM, &sa, &old_term);
  LmStatus st = lm_synth_write (options, out, msg);
  sigaction (SIGINT, &old_int, NULL);
  sigaction (SIGTERM, &old_term, NULL);
  if (st != LM_OK && line.shown && line.tty)
    fputc ('\n', stderr);   /* end the progress line before the error */
  return st;
}

int
cli_make_model (int argc, char **argv)
{
  g_autofree char *arch = NULL, *preset = NULL, *type = NULL, *out = NULL, *vocab = NULL;
  gint64 seed = 0;
  int threads = 0, layers = 0;
  gboolean dry_run = FALSE, force = FALSE;
  GOptionEntry entries[] = {
    { "arch", 0, 0, G_OPTION_ARG_STRING, &arch, "qwen35, qwen35moe, qwen2, qwen3 or qwen3moe", "ARCH" },
    { "preset", 0, 0, G_OPTION_ARG_STRING, &preset,
      "tiny, bench (4 layers of the full model) or full (Qwen3.5-35B-A3B or Qwen3-30B-A3B)",
      "PRESET" },
    { "type", 0, 0, G_OPTION_ARG_STRING, &type, "f32, f16, q8_0, q4_k_m, q4_0 or q5_0", "TYPE" },
    { "out", 'o', 0, G_OPTION_ARG_FILENAME, &out, "Output GGUF file", "FILE" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Random seed (default 0)", "S" },
    { "vocab", 0, 0, G_OPTION_ARG_FILENAME, &vocab,
      "Copy the tokenizer from this GGUF (same vocabulary size)", "FILE" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &threads, "Worker threads (default: all)", "N" },
    { "dry-run", 'n', 0, G_OPTION_ARG_NONE, &dry_run,
      "Print the shape, file size and bytes per decoded token; write nothing", NULL },
    { "force", 'f', 0, G_OPTION_ARG_NONE, &force, "Replace an existing output file", NULL },
    /* for timing a part of the full preset on a small disk */
    { "layers", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_INT, &layers,
      "Only the first N layers", "N" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- write a GGUF test model");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      fprintf (stderr, "tensafe-cli make-model: %s\n", error->message);
      return 2;
    }
  /* in LmSynthArch order */
  static const char *const archs[] = { "qwen35", "qwen35moe", "qwen2", "qwen3", "qwen3moe" };
  static const char *const presets[] = { "tiny", "bench", "full" };
  /* in LmSynthType order */
  static const char *const types[] = { "f32", "f16", "q8_0", "q4_k_m", "q4_0", "q5_0" };
  int a, p, t;
  if (!pick (arch, archs, G_N_ELEMENTS (archs), &a) || !pick (preset, presets, 3, &p)
      || !pick (type, types, G_N_ELEMENTS (types), &t)
      || (out == NULL && !dry_run) || argc != 1 || layers < 0)
    {
      fprintf (stderr, "Usage: tensafe-cli make-model --arch qwen35|qwen35moe|qwen2|qwen3|qwen3moe "
                       "--preset tiny|bench|full --type f32|f16|q8_0|q4_k_m|q4_0|q5_0 "
                       "(--out FILE [--force] | --dry-run) [--seed S] [--vocab GGUF] "
                       "[--threads N]\n");
      return 2;
    }
  LmSynthOptions options = {
    .arch = (LmSynthArch) a, .preset = (LmSynthPreset) p, .type = (LmSynthType) t,
    .seed = (uint64_t) seed, .threads = threads, .n_layer = (uint32_t) layers,
    .overwrite = force,
  };
  GgufFile *vocab_file = NULL;
  char *msg = NULL;
  int status = 1;
  if (vocab && lm_gguf_open (vocab, &vocab_file, &msg) != LM_OK)
    goto done;
  options.vocab_from = vocab_file;
  if (dry_run)
    {
      LmSynthPlan plan;
      if (lm_synth_plan (&options, &plan, &msg) != LM_OK)
        goto done;
      print_plan (&options, &plan, arch, preset, type);
      lm_synth_plan_clear (&plan);
      status = 0;
      goto done;
    }
  if (!force && g_file_test (out, G_FILE_TEST_EXISTS))
    {
      msg = g_strdup_printf ("%s already exists (--force replaces it)", out);
      goto done;
    }
  if (write_model (&options, out, &msg) == LM_OK)
    status = 0;
done:
  if (status != 0)
    fprintf (stderr, "tensafe-cli make-model: %s\n", msg ? msg : "failed");
  free (msg);
  lm_gguf_close (vocab_file);
  return status;
}
