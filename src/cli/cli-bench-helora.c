/* cli-bench-helora.c: tensafe-cli bench helora.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli.h"

int
cli_bench_helora (int argc, char **argv)
{
  return cli_not_available ("bench helora");
}
