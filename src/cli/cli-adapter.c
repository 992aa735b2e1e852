/* cli-adapter.c: tensafe-cli adapter reduce --rank R [--json] IN OUT, adapter bench.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lora-write.h"

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
      fprintf (stderr, "Usage: tensafe-cli adapter reduce --rank R [--json] IN OUT\n");
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

int
cli_adapter (int argc, char **argv)
{
  if (argc >= 2 && strcmp (argv[1], "reduce") == 0)
    return adapter_reduce (argc - 1, argv + 1);
  if (argc >= 2 && strcmp (argv[1], "bench") == 0)
    return cli_adapter_bench (argc - 1, argv + 1);
  fprintf (stderr, "Usage: tensafe-cli adapter reduce --rank R [--json] IN OUT\n"
           "       tensafe-cli adapter bench [--preset NAME] [--d D] [--ranks R,...] "
           "[--tokens N] [--lambda BITS] [--json]\n");
  return 2;
}
