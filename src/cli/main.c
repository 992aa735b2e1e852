/* main.c: tensafe-cli, the scriptable front end: dispatch to subcommands.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ts-core.h"

typedef struct {
  const char *name;
  int (*run) (int argc, char **argv);
  const char *summary;
} CliCommand;

static const CliCommand commands[] = {
  { "info", cli_info, "Show version and compute devices" },
  { "generate", cli_generate, "Generate text with a model (optionally HE-LoRA)" },
  { "tokenize", cli_tokenize, "Print the token ids of a text" },
  { "make-model", cli_make_model, "Write a GGUF test model with seeded random weights" },
  { "keys", cli_keys, "Create, seal, unseal and inspect CKKS keys" },
  { "adapter", cli_adapter, "Inspect and transform LoRA adapters" },
  { "models", cli_models, "List, download, import, remove and verify models" },
  { "bench", cli_bench, "Benchmarks: he, engine, helora" },
};

static int
usage (FILE *out)
{
  fprintf (out, "Usage: tensafe-cli COMMAND [OPTIONS]\n\nCommands:\n");
  for (size_t i = 0; i < G_N_ELEMENTS (commands); i++)
    fprintf (out, "  %-12s %s\n", commands[i].name, commands[i].summary);
  fprintf (out, "\n  --version    Print the version\n");
  return out == stderr ? 2 : 0;
}

int
cli_not_available (const char *command)
{
  fprintf (stderr, "tensafe-cli %s: not available in this build yet\n", command);
  return 1;
}

int
cli_bench (int argc, char **argv)
{
  if (argc < 2)
    {
      fprintf (stderr, "Usage: tensafe-cli bench he|engine|helora [OPTIONS]\n");
      return 2;
    }
  if (strcmp (argv[1], "he") == 0)
    return cli_bench_he (argc - 1, argv + 1);
  if (strcmp (argv[1], "engine") == 0)
    return cli_bench_engine (argc - 1, argv + 1);
  if (strcmp (argv[1], "helora") == 0)
    return cli_bench_helora (argc - 1, argv + 1);
  fprintf (stderr, "tensafe-cli bench: unknown benchmark '%s'\n", argv[1]);
  return 2;
}

int
main (int argc, char **argv)
{
  if (argc < 2)
    return usage (stderr);
  if (strcmp (argv[1], "--version") == 0)
    {
      printf ("tensafe-cli %s\n", ts_version ());
      return 0;
    }
  if (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0)
    return usage (stdout);
  for (size_t i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (argv[1], commands[i].name) == 0)
      return commands[i].run (argc - 1, argv + 1);
  fprintf (stderr, "tensafe-cli: unknown command '%s'\n\n", argv[1]);
  return usage (stderr);
}
