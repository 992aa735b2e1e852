/* cli-bench-engine.c: tensafe-cli bench engine.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli.h"

int
cli_bench_engine (int argc, char **argv)
{
  return cli_not_available ("bench engine");
}
