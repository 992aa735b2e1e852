/* cli-make-model.c: tensafe-cli make-model, a GGUF test model with seeded random weights.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int
cli_make_model (int argc, char **argv)
{
  g_autofree char *arch = NULL, *preset = NULL, *type = NULL, *out = NULL, *vocab = NULL;
  gint64 seed = 0;
  int threads = 0;
  GOptionEntry entries[] = {
    { "arch", 0, 0, G_OPTION_ARG_STRING, &arch, "qwen35 or qwen35moe", "ARCH" },
    { "preset", 0, 0, G_OPTION_ARG_STRING, &preset, "tiny or bench", "PRESET" },
    { "type", 0, 0, G_OPTION_ARG_STRING, &type, "f32, f16, q8_0 or q4_k_m", "TYPE" },
    { "out", 'o', 0, G_OPTION_ARG_FILENAME, &out, "Output GGUF file", "FILE" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Random seed (default 0)", "S" },
    { "vocab", 0, 0, G_OPTION_ARG_FILENAME, &vocab,
      "Copy the tokenizer from this GGUF (same vocabulary size)", "FILE" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &threads, "Worker threads (default: all)", "N" },
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
  static const char *const archs[] = { "qwen35", "qwen35moe" };
  static const char *const presets[] = { "tiny", "bench" };
  static const char *const types[] = { "f32", "f16", "q8_0", "q4_k_m" };
  int a, p, t;
  if (!pick (arch, archs, 2, &a) || !pick (preset, presets, 2, &p) || !pick (type, types, 4, &t)
      || out == NULL || argc != 1)
    {
      fprintf (stderr, "Usage: tensafe-cli make-model --arch qwen35|qwen35moe --preset tiny|bench "
                       "--type f32|f16|q8_0|q4_k_m --out FILE [--seed S] [--vocab GGUF] "
                       "[--threads N]\n");
      return 2;
    }
  LmSynthOptions options = {
    .arch = (LmSynthArch) a, .preset = (LmSynthPreset) p, .type = (LmSynthType) t,
    .seed = (uint64_t) seed, .threads = threads,
  };
  GgufFile *vocab_file = NULL;
  char *msg = NULL;
  int status = 1;
  if (vocab && gguf_open (vocab, &vocab_file, &msg) != LM_OK)
    goto done;
  options.vocab_from = vocab_file;
  if (lm_synth_write (&options, out, &msg) == LM_OK)
    status = 0;
done:
  if (status != 0)
    fprintf (stderr, "tensafe-cli make-model: %s\n", msg ? msg : "failed");
  free (msg);
  gguf_close (vocab_file);
  return status;
}
