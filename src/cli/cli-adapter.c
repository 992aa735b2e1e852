/* cli-adapter.c: tensafe-cli adapter reduce --rank R [--json] IN OUT,
 * adapter synth --model GGUF --rank R [--modules LIST] [--seed S] OUT, adapter bench.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lm.h"
#include "lora-write.h"
#include "ts-helora-adapter.h"

typedef struct {
  gboolean json;
  guint n_modules;
  double kept, total;
} ReduceReport;

/* One line per module: name, ranks, fraction of ‖factor·B·A‖_F² kept. */
static bool
print_module (const char *name, const LmLoraReduceInfo *info, void *user_data)
{
  ReduceReport *rep = user_data;
  double frac = info->energy_total > 0.0 ? info->energy_kept / info->energy_total : 1.0;
  if (rep->json)
    printf ("%s{\"module\":\"%s\",\"rank_in\":%u,\"rank_out\":%u,\"energy_retained\":%.9f,"
            "\"frobenius_sq\":%.9g}", rep->n_modules ? ",\n  " : "\n  ", name, info->rank_in,
            info->rank_out, frac, info->energy_total);
  else
    printf ("%-56s r %3u -> %3u  retained %.6f of ||scale*B*A||_F^2\n", name, info->rank_in,
            info->rank_out, frac);
  rep->n_modules++;
  rep->kept += info->energy_kept;
  rep->total += info->energy_total;
  return true;
}

static int
adapter_reduce (int argc, char **argv)
{
  gint rank = 0;
  gboolean json = FALSE;
  GOptionEntry entries[] = {
    { "rank", 'r', 0, G_OPTION_ARG_INT, &rank, "New rank R (>= 1)", "R" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the per-module report as JSON", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "IN OUT - write the optimal rank-R approximation of every module of the adapter IN "
    "(a GGUF LoRA file or a PEFT folder) to OUT, in the same format");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      fprintf (stderr, "tensafe-cli adapter reduce: %s\n", error->message);
      return 2;
    }
  if (rank < 1 || rank > 65536 || argc != 3)
    {
      fprintf (stderr, "Usage: tensafe-cli adapter reduce --rank R [--json] IN OUT\n"
           "       tensafe-cli adapter synth --model GGUF --rank R [--modules LIST] [--seed S] OUT\n");
      return 2;
    }
  ReduceReport rep = { .json = json };
  if (json)
    printf ("{\"modules\":[");
  char *msg = NULL;
  LmStatus st = lm_lora_reduce_file (argv[1], argv[2], (uint32_t) rank, print_module, &rep, &msg);
  double frac = rep.total > 0.0 ? rep.kept / rep.total : 1.0;
  if (json)
    printf ("\n],\"energy_retained\":%.9f,\"ok\":%s}\n", frac, st == LM_OK ? "true" : "false");
  else if (st == LM_OK)
    printf ("%u modules, retained %.6f of the total squared Frobenius norm; wrote %s\n",
            rep.n_modules, frac, argv[2]);
  if (st != LM_OK)
    fprintf (stderr, "tensafe-cli adapter reduce: %s\n", msg ? msg : lm_status_message (st));
  free (msg);
  return st == LM_OK ? 0 : 1;
}

#define SYNTH_USAGE "Usage: tensafe-cli adapter synth --model GGUF --rank R " \
  "[--modules attn_q,attn_k,attn_v,attn_output] [--seed S] OUT\n"

/* A seeded random adapter for a model: for trying HE-LoRA on a real model
 * without a trained adapter (same values for the same seed). */
static int
adapter_synth (int argc, char **argv)
{
  g_autofree char *model_path = NULL, *modules = NULL;
  int rank = 16;
  gint64 seed = 1;
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model_path, "The model GGUF", "FILE" },
    { "rank", 'r', 0, G_OPTION_ARG_INT, &rank, "Rank (default 16)", "R" },
    { "modules", 0, 0, G_OPTION_ARG_STRING, &modules,
      "Projections of every attention layer (default attn_q,attn_v)", "LIST" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Random seed (default 1)", "S" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("OUT - write a random LoRA adapter");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      fprintf (stderr, "tensafe-cli adapter synth: %s\n", error->message);
      return 2;
    }
  if (model_path == NULL || argc != 2 || rank < 1 || rank > 1024)
    {
      fputs (SYNTH_USAGE, stderr);
      return 2;
    }
  g_auto (GStrv) kinds = g_strsplit (modules ? modules : "attn_q,attn_v", ",", -1);
  LmModel *model = NULL;
  char *msg = NULL;
  LmStatus st = lm_model_load (model_path, &model, &msg);
  if (st != LM_OK)
    {
      fprintf (stderr, "tensafe-cli adapter synth: %s\n", msg ? msg : lm_status_message (st));
      free (msg);
      return 1;
    }
  gboolean ok = ts_helora_adapter_write_synthetic (model, argv[1], (guint) rank, (guint64) seed,
                                                   (const char *const *) kinds, &error);
  lm_model_free (model);
  if (!ok)
    {
      fprintf (stderr, "tensafe-cli adapter synth: %s\n", error->message);
      return 1;
    }
  return 0;
}

int
cli_adapter (int argc, char **argv)
{
  if (argc >= 2 && strcmp (argv[1], "reduce") == 0)
    return adapter_reduce (argc - 1, argv + 1);
  if (argc >= 2 && strcmp (argv[1], "bench") == 0)
    return cli_adapter_bench (argc - 1, argv + 1);
  if (argc >= 2 && strcmp (argv[1], "synth") == 0)
    return adapter_synth (argc - 1, argv + 1);
  fprintf (stderr, "Usage: tensafe-cli adapter reduce --rank R [--json] IN OUT\n"
           "       tensafe-cli adapter bench [--preset NAME] [--d D] [--ranks R,...] "
           "[--tokens N] [--lambda BITS] [--json]\n");
  return 2;
}
