/* cli.h: the subcommands of tensafe-cli, one file each.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each command gets argv starting at its own name (argv[0] = "info", ...),
 * prints results on stdout, errors on stderr, and returns the exit status.
 */
#pragma once

int cli_info (int argc, char **argv);
int cli_generate (int argc, char **argv);
int cli_tokenize (int argc, char **argv);
int cli_make_model (int argc, char **argv);
int cli_keys (int argc, char **argv);
int cli_adapter (int argc, char **argv);
/* models: list, pull, import, rm, verify (cli-models.c). */
int cli_models (int argc, char **argv);
/* adapter bench: HE-LoRA time per module by rank, adapter-private costs. */
int cli_adapter_bench (int argc, char **argv);
/* bench dispatches on argv[1]: he, engine, helora. */
int cli_bench (int argc, char **argv);
int cli_bench_he (int argc, char **argv);
int cli_bench_engine (int argc, char **argv);
int cli_bench_helora (int argc, char **argv);

/* Prints "tensafe-cli COMMAND: not available in this build yet" and returns 1. */
int cli_not_available (const char *command);
